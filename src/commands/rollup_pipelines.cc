#include "commands/rollup_pipelines.h"

#include <cmath>
#include <string_view>

namespace hourglass::commands {

using bson::BsonArrayBuilder;
using bson::BsonBuilder;
using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;
using timeseries::DirtyRange;
using timeseries::RollupSpec;
using timeseries::RollupStat;

namespace {

constexpr int64_t kDayMs = 86'400'000;

// $dateTrunc's units of a fixed length, and the calendar ones (whose bins start at midnight UTC).
constexpr std::pair<std::string_view, int64_t> kFixedUnits[] = {{"millisecond", 1},
                                                                {"second", 1'000},
                                                                {"minute", 60'000},
                                                                {"hour", 3'600'000},
                                                                {"day", kDayMs}};
constexpr std::string_view kCalendarUnits[] = {"week", "month", "quarter", "year"};

bool IsMetaPath(std::string_view path, const timeseries::TimeseriesOptions& o) {
  if (!o.meta_field) return false;
  const std::string& m = *o.meta_field;
  return path == m || (path.size() > m.size() && path.starts_with(m) && path[m.size()] == '.');
}

bool IsUtc(const BsonElement& tz) {
  if (tz.eoo()) return true;
  if (tz.type() != BsonType::kString) return false;
  for (std::string_view utc : {"UTC", "GMT", "Etc/UTC", "Etc/GMT", "Z", "+00:00", "+00", "+0000"}) {
    if (tz.Str() == utc) return true;
  }
  return false;
}

// A $dateTrunc of the time field into bins that are unions of the rollup's bins.
bool DateTruncFitsBins(const BsonElement& spec, const RollupTarget& t) {
  if (spec.type() != BsonType::kObject) return false;
  const BsonObj o = spec.Obj();
  for (BsonElement e : o) {
    std::string_view f = e.FieldName();
    if (f != "date" && f != "unit" && f != "binSize" && f != "timezone" && f != "startOfWeek") {
      return false;
    }
  }
  if (o["date"].type() != BsonType::kString ||
      o["date"].Str() != "$" + t.source_options.time_field || !IsUtc(o["timezone"]) ||
      o["unit"].type() != BsonType::kString) {
    return false;
  }
  if (!o["startOfWeek"].eoo() && o["startOfWeek"].type() != BsonType::kString) return false;
  int64_t bin_size = 1;
  if (BsonElement b = o["binSize"]; !b.eoo()) {
    if (!b.IsNumber()) return false;
    const double d = b.NumberDouble();
    if (!(d >= 1 && d <= 1e9) || std::floor(d) != d) return false;
    bin_size = static_cast<int64_t>(d);
  }
  const int64_t every = t.spec.every_ms;
  for (std::string_view unit : kCalendarUnits) {
    if (o["unit"].Str() == unit) return kDayMs % every == 0;
  }
  for (auto [unit, ms] : kFixedUnits) {
    if (o["unit"].Str() == unit) return (bin_size * ms) % every == 0;
  }
  return false;
}

// Whether a $group key uses only the metaField, constants and $dateTrunc of the time field into
// whole bins: then it takes the same value on a rollup row as on each measurement of the row.
bool KeyFitsBins(const BsonElement& v, const RollupTarget& t) {
  switch (v.type()) {
    case BsonType::kString: {
      std::string_view s = v.Str();
      if (s.starts_with("$$")) return false;
      if (s.starts_with("$")) return IsMetaPath(s.substr(1), t.source_options);
      return true;
    }
    case BsonType::kObject:
    case BsonType::kArray:
      for (BsonElement e : v.Obj()) {
        std::string_view name = e.FieldName();
        if (v.type() == BsonType::kObject && name == "$dateTrunc") {
          if (!DateTruncFitsBins(e, t)) return false;
        } else if (name == "$literal") {
          continue;
        } else if (name == "$rand" || name == "$function" || name == "$accumulator" ||
                   name == "$meta") {
          return false;
        } else if (!KeyFitsBins(e, t)) {
          return false;
        }
      }
      return true;
    default:
      return true;  // a constant
  }
}

// Whether a $match tests only the metaField and time bounds on bin boundaries.
bool MatchFitsBins(const BsonObj& filter, const RollupTarget& t) {
  for (BsonElement e : filter) {
    std::string_view name = e.FieldName();
    if (name == "$and") {
      if (e.type() != BsonType::kArray) return false;
      for (BsonElement c : e.Obj()) {
        if (c.type() != BsonType::kObject || !MatchFitsBins(c.Obj(), t)) return false;
      }
    } else if (name == t.source_options.time_field) {
      if (e.type() != BsonType::kObject || e.Obj().IsEmpty()) return false;
      for (BsonElement bound : e.Obj()) {
        if ((bound.FieldName() != "$gte" && bound.FieldName() != "$lt") ||
            bound.type() != BsonType::kDate ||
            t.spec.BinStart(bound.DateMillis()) != bound.DateMillis()) {
          return false;
        }
      }
    } else if (!IsMetaPath(name, t.source_options)) {
      return false;
    }
  }
  return true;
}

struct Accumulator {
  std::string name;
  RollupStat op;
  std::string field;
};

// The $group's accumulators, if each is a statistic the rollup keeps of a field.
std::optional<std::vector<Accumulator>> Accumulators(const BsonObj& group, const RollupTarget& t) {
  static constexpr std::pair<std::string_view, RollupStat> kOps[] = {{"$avg", RollupStat::kAvg},
                                                                     {"$sum", RollupStat::kSum},
                                                                     {"$min", RollupStat::kMin},
                                                                     {"$max", RollupStat::kMax}};
  std::vector<Accumulator> out;
  for (BsonElement e : group) {
    if (e.FieldName() == "_id") continue;
    if (e.type() != BsonType::kObject || e.Obj().IsEmpty()) return std::nullopt;
    BsonObj spec = e.Obj();
    BsonElement op = spec.FirstElement();
    if (spec.HasField("$") || op.type() != BsonType::kString) return std::nullopt;
    std::string_view arg = op.Str();
    if (!arg.starts_with("$") || arg.starts_with("$$") || arg.find('.') != std::string_view::npos) {
      return std::nullopt;
    }
    const std::string field(arg.substr(1));
    std::optional<RollupStat> stat;
    for (auto [name, s] : kOps) {
      if (op.FieldName() == name) stat = s;
    }
    if (!stat) return std::nullopt;
    bool kept = false;
    for (const auto& [f, asked] : t.spec.fields) {
      if (f != field) continue;
      // $avg needs its sum and count, which `avg` brings; the others their own statistic.
      const auto stored = *stat == RollupStat::kAvg ? asked : RollupSpec::Stored(asked);
      kept = std::find(stored.begin(), stored.end(), *stat) != stored.end();
    }
    if (!kept) return std::nullopt;
    out.push_back({std::string(e.FieldName()), *stat, field});
  }
  return out;
}

void AppendStage(BsonArrayBuilder& stages, std::string_view name, const BsonObj& spec) {
  BsonBuilder s;
  s.AppendObject(name, spec);
  stages.AppendObject(s.Obj());
}

// {$or: [<time in each range>]} (or {$nor: ...} with `negate`).
BsonObj RangesFilter(const std::string& time_field, const std::vector<DirtyRange>& ranges,
                     bool negate) {
  BsonBuilder b;
  size_t arr = b.OpenArray(negate ? "$nor" : "$or");
  int i = 0;
  for (const DirtyRange& r : ranges) {
    size_t o = b.OpenObject(std::to_string(i++));
    AppendTimeRange(b, time_field, r.from, r.to);
    b.Close(o);
  }
  b.Close(arr);
  return b.Obj();
}

// The conjunction of the filters given (the first alone, or {} for none).
BsonObj And(const std::vector<BsonObj>& filters) {
  if (filters.empty()) return BsonObj();
  if (filters.size() == 1) return filters[0];
  BsonBuilder b;
  size_t arr = b.OpenArray("$and");
  for (size_t i = 0; i < filters.size(); ++i) b.AppendObject(std::to_string(i), filters[i]);
  b.Close(arr);
  return b.Obj();
}

}  // namespace

void AppendTimeRange(BsonBuilder& b, const std::string& field, int64_t from, int64_t to) {
  size_t range = b.OpenObject(field);
  b.AppendDate("$gte", from);
  b.AppendDate("$lt", to);
  b.Close(range);
}

BsonObj RollupRowsPipeline(const RollupTarget& t, const BsonObj& match) {
  const RollupSpec& spec = t.spec;
  BsonArrayBuilder stages;
  AppendStage(stages, "$match", match);

  BsonBuilder group;
  size_t id = group.OpenObject("_id");
  size_t trunc = group.OpenObject("t");
  size_t op = group.OpenObject("$dateTrunc");
  group.AppendString("date", "$" + t.source_options.time_field);
  const char* unit = "millisecond";
  int64_t bin_size = spec.every_ms;
  for (auto [name, ms] : kFixedUnits) {
    if (spec.every_ms % ms == 0) unit = name.data(), bin_size = spec.every_ms / ms;
  }
  group.AppendString("unit", unit);
  group.AppendInt64("binSize", bin_size);
  group.Close(op);
  group.Close(trunc);
  if (t.source_options.meta_field) group.AppendString("m", "$" + *t.source_options.meta_field);
  group.Close(id);
  for (size_t i = 0; i < spec.fields.size(); ++i) {
    const std::string path = "$" + spec.fields[i].first;
    for (RollupStat s : RollupSpec::Stored(spec.fields[i].second)) {
      size_t acc = group.OpenObject("f" + std::to_string(i) + "_" + std::string(RollupStatName(s)));
      switch (s) {
        case RollupStat::kAvg:
          group.AppendString("$avg", path);
          break;
        case RollupStat::kSum:
          group.AppendString("$sum", path);
          break;
        case RollupStat::kMin:
          group.AppendString("$min", path);
          break;
        case RollupStat::kMax:
          group.AppendString("$max", path);
          break;
        case RollupStat::kCount: {
          // The field's numeric values: what $avg divides by.
          size_t sum = group.OpenObject("$sum");
          size_t cond = group.OpenArray("$cond");
          size_t is_number = group.OpenObject("0");
          group.AppendString("$isNumber", path);
          group.Close(is_number);
          group.AppendInt32("1", 1);
          group.AppendInt32("2", 0);
          group.Close(cond);
          group.Close(sum);
          break;
        }
      }
      group.Close(acc);
    }
  }
  AppendStage(stages, "$group", group.Obj());
  // In time order, so that each series' rows go into its rollup buckets in order.
  BsonBuilder sort;
  sort.AppendInt32("_id.t", 1);
  AppendStage(stages, "$sort", sort.Obj());

  BsonBuilder row;
  row.AppendString(t.rollup_options.time_field, "$_id.t");
  if (t.rollup_options.meta_field) row.AppendString(*t.rollup_options.meta_field, "$_id.m");
  for (size_t i = 0; i < spec.fields.size(); ++i) {
    size_t field = row.OpenObject(spec.fields[i].first);
    for (RollupStat s : RollupSpec::Stored(spec.fields[i].second)) {
      const std::string name(RollupStatName(s));
      row.AppendString(name, "$f" + std::to_string(i) + "_" + name);
    }
    row.Close(field);
  }
  AppendStage(stages, "$replaceWith", row.Obj());
  return stages.Obj();
}

std::optional<BsonObj> AnswerFromRollup(const RollupTarget& t, const BsonObj& stages,
                                        const std::vector<DirtyRange>& pending) {
  if (t.source_options.time_field != t.rollup_options.time_field ||
      t.source_options.meta_field != t.rollup_options.meta_field) {
    return std::nullopt;
  }
  std::vector<BsonObj> list;
  for (BsonElement e : stages) {
    if (e.type() != BsonType::kObject || e.Obj().IsEmpty()) return std::nullopt;
    list.push_back(e.Obj());
  }
  size_t at = 0;
  std::vector<BsonObj> user_match;
  if (at < list.size() && list[at].FirstElement().FieldName() == "$match") {
    BsonElement m = list[at].FirstElement();
    if (m.type() != BsonType::kObject || !MatchFitsBins(m.Obj(), t)) return std::nullopt;
    if (!m.Obj().IsEmpty()) user_match.push_back(m.Obj());
    ++at;
  }
  if (at >= list.size() || list[at].FirstElement().FieldName() != "$group" ||
      list[at].FirstElement().type() != BsonType::kObject) {
    return std::nullopt;
  }
  const BsonObj group = list[at].FirstElement().Obj();
  if (!group.HasField("_id") || !KeyFitsBins(group["_id"], t)) return std::nullopt;
  auto accumulators = Accumulators(group, t);
  if (!accumulators) return std::nullopt;

  const std::string& time = t.rollup_options.time_field;
  BsonArrayBuilder out;
  std::vector<BsonObj> rollup_match = user_match;
  if (!pending.empty()) rollup_match.push_back(RangesFilter(time, pending, true));
  if (!rollup_match.empty()) AppendStage(out, "$match", And(rollup_match));
  if (!pending.empty()) {
    std::vector<BsonObj> source_match = user_match;
    source_match.push_back(RangesFilter(time, pending, false));
    BsonBuilder u;
    u.AppendString("coll", t.source);
    u.AppendArray("pipeline", RollupRowsPipeline(t, And(source_match)));
    AppendStage(out, "$unionWith", u.Obj());
  }
  BsonBuilder g;
  g.AppendElement(group["_id"]);
  bool any_avg = false;
  for (size_t i = 0; i < accumulators->size(); ++i) {
    const Accumulator& a = (*accumulators)[i];
    auto acc = [&](std::string_view name, std::string_view op, std::string_view stat) {
      size_t o = g.OpenObject(name);
      g.AppendString(op, "$" + a.field + "." + std::string(stat));
      g.Close(o);
    };
    switch (a.op) {
      case RollupStat::kAvg:
        any_avg = true;
        acc(a.name, "$sum", "sum");
        acc("__rollup_count_" + std::to_string(i), "$sum", "count");
        break;
      case RollupStat::kSum:
        acc(a.name, "$sum", "sum");
        break;
      case RollupStat::kMin:
        acc(a.name, "$min", "min");
        break;
      case RollupStat::kMax:
        acc(a.name, "$max", "max");
        break;
      case RollupStat::kCount:
        break;
    }
  }
  AppendStage(out, "$group", g.Obj());
  if (any_avg) {
    // The $group's fields in its order, each average the sum over the count (null for none).
    BsonBuilder r;
    r.AppendString("_id", "$_id");
    for (size_t i = 0; i < accumulators->size(); ++i) {
      const Accumulator& a = (*accumulators)[i];
      if (a.op != RollupStat::kAvg) {
        r.AppendString(a.name, "$" + a.name);
        continue;
      }
      const std::string count = "$__rollup_count_" + std::to_string(i);
      size_t o = r.OpenObject(a.name);
      size_t cond = r.OpenObject("$cond");
      size_t test = r.OpenObject("if");
      size_t eq = r.OpenArray("$eq");
      r.AppendString("0", count);
      r.AppendInt32("1", 0);
      r.Close(eq);
      r.Close(test);
      r.AppendNull("then");
      size_t els = r.OpenObject("else");
      size_t div = r.OpenArray("$divide");
      r.AppendString("0", "$" + a.name);
      r.AppendString("1", count);
      r.Close(div);
      r.Close(els);
      r.Close(cond);
      r.Close(o);
    }
    AppendStage(out, "$replaceWith", r.Obj());
  }
  for (size_t i = at + 1; i < list.size(); ++i) out.AppendObject(list[i]);
  return out.Obj();
}

}  // namespace hourglass::commands
