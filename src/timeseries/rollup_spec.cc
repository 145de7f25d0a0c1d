#include "timeseries/rollup_spec.h"

#include <algorithm>
#include <charconv>

#include "bson/field_check.h"
#include "timeseries/timeseries_options.h"

namespace hourglass::timeseries {

namespace {

using bson::BsonBuilder;
using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;

constexpr std::string_view kContext = "create.rollupOf";
constexpr int64_t kDayMs = 86'400'000;
// $dateTrunc's reference point for bins of more than one unit: 2000-01-01T00:00:00Z.
constexpr int64_t kBinReferenceMs = 946'684'800'000;

constexpr std::pair<std::string_view, RollupStat> kStatNames[] = {{"avg", RollupStat::kAvg},
                                                                  {"sum", RollupStat::kSum},
                                                                  {"count", RollupStat::kCount},
                                                                  {"min", RollupStat::kMin},
                                                                  {"max", RollupStat::kMax}};

Status Invalid(std::string msg) { return Status(ErrorCode::kInvalidOptions, std::move(msg)); }

// "<n><s|m|h|d>" → milliseconds.
StatusWith<int64_t> ParseEvery(std::string_view s) {
  static constexpr std::pair<char, int64_t> kUnits[] = {
      {'s', 1'000}, {'m', 60'000}, {'h', 3'600'000}, {'d', kDayMs}};
  auto bad = [&] {
    return Status(
        ErrorCode::kBadValue,
        "rollupOf.every must be a whole number followed by s, m, h or d (\"1h\"), got \"" +
            std::string(s) + "\"");
  };
  if (s.size() < 2 || s[0] < '1' || s[0] > '9') return bad();
  int64_t n = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size() - 1, n);
  if (ec != std::errc() || end != s.data() + s.size() - 1) return bad();
  for (auto [unit, ms] : kUnits) {
    if (s.back() != unit) continue;
    if (n > (int64_t{366} * kDayMs) / ms) {
      return Status(ErrorCode::kBadValue, "rollupOf.every must be at most 366 days");
    }
    const int64_t every = n * ms;
    if (kDayMs % every != 0 && every % kDayMs != 0) {
      return Status(ErrorCode::kBadValue,
                    "rollupOf.every must divide a day or be a whole number of days, got \"" +
                        std::string(s) + "\"");
    }
    return every;
  }
  return bad();
}

Status CheckFieldName(std::string_view f, const TimeseriesOptions& rollup) {
  if (f.empty() || f[0] == '$' || f.find('.') != std::string_view::npos) {
    return Invalid("rollupOf.fields: '" + std::string(f) +
                   "' is not a top-level field name (empty, starting with '$' or dotted)");
  }
  if (f == rollup.time_field || (rollup.meta_field && f == *rollup.meta_field)) {
    return Invalid("rollupOf.fields: '" + std::string(f) +
                   "' is the rollup's timeField or metaField");
  }
  return Status::OK();
}

StatusWith<std::vector<RollupStat>> ParseStats(const BsonElement& e) {
  const std::string path = std::string(kContext) + ".fields." + std::string(e.FieldName());
  if (e.type() != BsonType::kArray) return bson::WrongTypeAtPath(path, e, "array");
  std::vector<RollupStat> stats;
  for (BsonElement s : e.Obj()) {
    if (s.type() != BsonType::kString) return bson::WrongTypeAtPath(path, s, "string");
    auto it = std::find_if(std::begin(kStatNames), std::end(kStatNames),
                           [&](const auto& p) { return p.first == s.Str(); });
    if (it == std::end(kStatNames)) {
      return Status(ErrorCode::kBadValue, path + ": unknown statistic \"" + std::string(s.Str()) +
                                              "\" (avg, sum, count, min, max)");
    }
    if (std::find(stats.begin(), stats.end(), it->second) != stats.end()) {
      return Status(ErrorCode::kBadValue, path + ": \"" + std::string(s.Str()) + "\" twice");
    }
    stats.push_back(it->second);
  }
  if (stats.empty()) return Invalid(path + " names no statistic");
  std::sort(stats.begin(), stats.end());
  return stats;
}

}  // namespace

std::string_view RollupStatName(RollupStat s) {
  for (auto [name, stat] : kStatNames) {
    if (stat == s) return name;
  }
  return "?";
}

std::vector<RollupStat> RollupSpec::Stored(const std::vector<RollupStat>& asked) {
  std::vector<RollupStat> out = asked;
  if (std::find(asked.begin(), asked.end(), RollupStat::kAvg) != asked.end()) {
    out.push_back(RollupStat::kSum);
    out.push_back(RollupStat::kCount);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

int64_t RollupSpec::BinStart(int64_t millis) const {
  // Floor division on the offset from the reference, without overflow for any Date.
  __int128 off = static_cast<__int128>(millis) - kBinReferenceMs;
  __int128 q = off / every_ms;
  if (off % every_ms < 0) --q;
  // Dates within a bin of the smallest Date: the smallest Date (not a bin start).
  return static_cast<int64_t>(std::max<__int128>(q * every_ms + kBinReferenceMs, INT64_MIN));
}

BsonObj RollupSpec::ToBson() const {
  BsonBuilder b;
  b.AppendString("source", source);
  b.AppendString("every", every);
  if (group_by) b.AppendString("groupBy", *group_by);
  size_t f = b.OpenObject("fields");
  for (const auto& [name, stats] : fields) {
    size_t a = b.OpenArray(name);
    int i = 0;
    for (RollupStat s : stats) b.AppendString(std::to_string(i++), RollupStatName(s));
    b.Close(a);
  }
  b.Close(f);
  return b.Obj();
}

StatusWith<RollupSpec> RollupSpec::FromBson(const BsonObj& stored) {
  RollupSpec spec;
  if (stored["source"].type() != BsonType::kString || stored["every"].type() != BsonType::kString ||
      stored["fields"].type() != BsonType::kObject) {
    return Status(ErrorCode::kBadValue, "stored rollupOf is malformed: " + stored.ToJson());
  }
  spec.source = std::string(stored["source"].Str());
  spec.every = std::string(stored["every"].Str());
  HG_ASSIGN_OR_RETURN(spec.every_ms, ParseEvery(spec.every));
  if (stored["groupBy"].type() == BsonType::kString) {
    spec.group_by = std::string(stored["groupBy"].Str());
  }
  for (BsonElement f : stored["fields"].Obj()) {
    HG_ASSIGN_OR_RETURN(auto stats, ParseStats(f));
    spec.fields.emplace_back(std::string(f.FieldName()), std::move(stats));
  }
  return spec;
}

StatusWith<RollupSpec> ParseRollupSpec(const BsonElement& value, const TimeseriesOptions& rollup) {
  if (value.type() != BsonType::kObject) {
    return bson::WrongTypeAtPath(kContext, value, "object");
  }
  const BsonObj obj = value.Obj();
  for (BsonElement e : obj) {
    std::string_view f = e.FieldName();
    if (f != "source" && f != "every" && f != "groupBy" && f != "fields") {
      return bson::UnknownField(kContext, f);
    }
  }
  RollupSpec spec;
  HG_ASSIGN_OR_RETURN(auto source, bson::GetString(kContext, obj, "source"));
  if (!source) return bson::MissingField(kContext, "source");
  if (source->empty() || source->find('$') != std::string::npos ||
      source->find('\0') != std::string::npos) {
    return Status(ErrorCode::kInvalidNamespace,
                  "rollupOf.source is not a valid collection name: \"" + *source + "\"");
  }
  spec.source = *source;
  HG_ASSIGN_OR_RETURN(auto every, bson::GetString(kContext, obj, "every"));
  if (!every) return bson::MissingField(kContext, "every");
  HG_ASSIGN_OR_RETURN(spec.every_ms, ParseEvery(*every));
  spec.every = *every;
  HG_ASSIGN_OR_RETURN(spec.group_by, bson::GetString(kContext, obj, "groupBy"));
  HG_ASSIGN_OR_RETURN(auto fields, bson::GetObject(kContext, obj, "fields"));
  if (!fields) return bson::MissingField(kContext, "fields");
  for (BsonElement f : *fields) {
    HG_RETURN_IF_ERROR(CheckFieldName(f.FieldName(), rollup));
    HG_ASSIGN_OR_RETURN(auto stats, ParseStats(f));
    for (const auto& [name, _] : spec.fields) {
      if (name == f.FieldName()) {
        return Status(ErrorCode::kBadValue, "rollupOf.fields: '" + name + "' is given twice");
      }
    }
    spec.fields.emplace_back(std::string(f.FieldName()), std::move(stats));
  }
  if (spec.fields.empty()) return Invalid("rollupOf.fields names no field");
  return spec;
}

Status CheckRollupSource(RollupSpec& spec, const TimeseriesOptions& rollup,
                         const TimeseriesOptions& source, bool source_is_rollup) {
  if (source_is_rollup) {
    return Invalid("rollupOf.source: '" + spec.source +
                   "' is itself a rollup; roll up its source with a larger 'every' instead");
  }
  if (spec.group_by && (!source.meta_field || *spec.group_by != *source.meta_field)) {
    return Invalid("rollupOf.groupBy must be the source's metaField" +
                   (source.meta_field ? " '" + *source.meta_field + "'"
                                      : std::string(" (the source has none)")) +
                   ", got '" + *spec.group_by + "'");
  }
  spec.group_by = source.meta_field;
  if (source.meta_field.has_value() != rollup.meta_field.has_value()) {
    return Invalid(source.meta_field
                       ? "a rollup of a collection with a metaField needs a metaField of its own"
                       : "a rollup of a collection without a metaField cannot have one");
  }
  for (const auto& [name, _] : spec.fields) {
    if (name == source.time_field || (source.meta_field && name == *source.meta_field)) {
      return Invalid("rollupOf.fields: '" + name + "' is the source's timeField or metaField");
    }
  }
  return Status::OK();
}

}  // namespace hourglass::timeseries
