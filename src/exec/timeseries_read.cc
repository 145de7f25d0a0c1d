#include "exec/timeseries_read.h"

#include <algorithm>
#include <cstdlib>
#include <deque>
#include <functional>
#include <limits>
#include <map>

#include "base/server_parameters.h"
#include "bson/bson_compare.h"
#include "exec/lastpoint_pattern.h"
#include "exec/newest_bins.h"
#include "pipeline/dependencies.h"
#include "pipeline/expression.h"
#include "pipeline/group_block.h"
#include "timeseries/bucket_filter.h"

namespace hourglass::exec {

using bson::BsonBuilder;
using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;

namespace {

ServerParameter* BoolParameter(const char* name) {
  auto& reg = ServerParameterRegistry::Get();
  if (ServerParameter* p = reg.Find(name)) return p;
  return reg.Register(name, true, true, true);
}
ServerParameter* RewritesParameter() { return BoolParameter("hourglassTimeseriesRewrites"); }
ServerParameter* BucketFiltersParameter() {
  return BoolParameter("hourglassTimeseriesBucketFilters");
}
ServerParameter* LatestCacheParameter() { return BoolParameter("hourglassTimeseriesLatestCache"); }

bool IsSortDirection(const BsonElement& e, int want) {
  return e.IsNumber() && e.NumberDouble() == want;
}

// {$sort: {T: 1|-1}}: the direction, else 0.
int TimeSortDirection(const BsonObj& stage, const std::string& time_field) {
  BsonElement s = stage.FirstElement();
  if (s.FieldName() != "$sort" || s.type() != BsonType::kObject || s.Obj().NumFields() != 1) {
    return 0;
  }
  BsonElement k = s.Obj().FirstElement();
  if (k.FieldName() != time_field) return 0;
  return IsSortDirection(k, 1) ? 1 : IsSortDirection(k, -1) ? -1 : 0;
}

// Whether a $group key truncates the time field into bins that can be shorter than a bucket's
// span (e.g. minutes of hour-long buckets): most buckets then hold several keys, which control
// cannot answer, and block processing of the unpacked columns is the faster path.
bool KeyBinsFinerThanBuckets(const BsonElement& e, const std::string& time, int64_t span_ms) {
  if (e.type() != BsonType::kObject && e.type() != BsonType::kArray) return false;
  BsonObj obj = e.Obj();
  if (e.type() == BsonType::kObject && obj.NumFields() == 1 &&
      obj.FirstElement().FieldName() == "$dateTrunc" &&
      obj.FirstElement().type() == BsonType::kObject) {
    BsonObj args = obj.FirstElement().Obj();
    BsonElement date = args["date"];
    if (date.type() == BsonType::kString && date.Str() == "$" + time) {
      const int64_t width = pipeline::DateTruncBinsOf(args).min_width;
      return width == 0 || width < span_ms;
    }
  }
  for (const BsonElement& child : obj) {
    if (KeyBinsFinerThanBuckets(child, time, span_ms)) return true;
  }
  return false;
}

// Whether the event filter tests measurement fields (not only the meta and time fields) and runs
// on a bucket's columns. Most buckets then match in part: a $group answered from control would
// unpack those measurement by measurement, where block processing tests and folds columns.
bool FiltersMeasurementColumns(const BsonObj& filter, const pipeline::FieldDependencies& deps,
                               const timeseries::TimeseriesOptions& options,
                               const query::Matcher* parsed,
                               const query::ExpressionContext& expr_ctx) {
  if (deps.needs_whole_document ||
      std::all_of(deps.fields.begin(), deps.fields.end(), [&](const std::string& f) {
        return f == options.time_field || (options.meta_field && f == *options.meta_field);
      })) {
    return false;
  }
  if (parsed != nullptr) return parsed->FieldConjuncts().has_value();
  auto matcher = query::Matcher::Parse(filter, expr_ctx);
  return matcher.ok() && matcher.value().FieldConjuncts().has_value();
}

// A find projection of plain 0/1 values on field names reads what the same $project reads; for
// any other ($slice, $elemMatch, positional, expressions) the whole document is needed.
BsonObj FindProjectionAsStage(const BsonObj& projection) {
  for (BsonElement e : projection) {
    bool plain = e.type() == BsonType::kBool || e.IsNumber();
    if (!plain || e.FieldName().find('$') != std::string_view::npos) {
      BsonBuilder b;
      b.AppendString("$replaceWith", "$$ROOT");  // needs the whole document
      return b.Obj();
    }
  }
  return StageOf("$project", projection);
}

// A $project excluding only top-level fields, or a $unset of top-level fields: their names.
std::optional<std::vector<std::string>> TopLevelExclusion(const BsonObj& stage) {
  BsonElement s = stage.FirstElement();
  std::vector<std::string> names;
  auto add = [&](std::string_view n) {
    if (n.empty() || n.find('.') != std::string_view::npos || n[0] == '$') return false;
    names.emplace_back(n);
    return true;
  };
  if (s.FieldName() == "$project" && s.type() == BsonType::kObject && !s.Obj().IsEmpty()) {
    for (BsonElement e : s.Obj()) {
      if (!pipeline::IsExclusionValue(e) || !add(e.FieldName())) return std::nullopt;
    }
    return names;
  }
  if (s.FieldName() == "$unset") {
    if (s.type() == BsonType::kString) {
      if (!add(s.Str())) return std::nullopt;
      return names;
    }
    if (s.type() == BsonType::kArray && !s.Obj().IsEmpty()) {
      for (BsonElement e : s.Obj()) {
        if (e.type() != BsonType::kString || !add(e.Str())) return std::nullopt;
      }
      return names;
    }
  }
  return std::nullopt;
}

// The summaries of a control-answered $group: one per bucket whose control answers exactly,
// else one per matching measurement.
class ControlGroupStream : public pipeline::DocumentStream {
 public:
  ControlGroupStream(std::unique_ptr<TimeseriesScan> scan, timeseries::ControlGroup group)
      : scan_(std::move(scan)), group_(std::move(group)) {
    if (group_.time_key()) {
      // The merge group's key, evaluated on two summaries that differ only in their time.
      // (A key reading `let` variables is never answered from control.)
      auto key = pipeline::Expression::ParseExpression(group_.merge_group()["_id"],
                                                       pipeline::ParseContext());
      if (key.ok()) {
        std::shared_ptr<const pipeline::Expression> expr = std::move(key).value();
        same_key_ = [expr](const BsonObj& a, const BsonObj& b) {
          pipeline::Variables vars;
          auto ka = expr->Evaluate(a, vars);
          auto kb = expr->Evaluate(b, vars);
          return ka.ok() && kb.ok() && pipeline::ValuesEqual(ka.value(), kb.value());
        };
      }
    }
  }
  StatusWith<std::optional<BsonObj>> Next() override {
    while (buffer_.empty()) {
      bool whole = false;
      HG_ASSIGN_OR_RETURN(auto bucket, scan_->NextBucket(&whole));
      if (!bucket) return std::optional<BsonObj>();
      if (whole) {
        if (auto summary = group_.Summarize(*bucket, same_key_)) {
          ++from_control_;
          buffer_.push_back(std::move(*summary));
          continue;
        }
      }
      HG_RETURN_IF_ERROR(scan_->UnpackBucket(*bucket, whole, [&](const BsonObj& m) {
        buffer_.push_back(group_.SummarizeMeasurement(m));
      }));
    }
    BsonObj out = std::move(buffer_.front());
    buffer_.pop_front();
    ++returned_;
    return std::optional<BsonObj>(std::move(out));
  }
  TimeseriesScan* scan() const { return scan_.get(); }
  const int64_t* from_control() const { return &from_control_; }
  const int64_t* returned() const { return &returned_; }

 private:
  std::unique_ptr<TimeseriesScan> scan_;
  timeseries::ControlGroup group_;
  timeseries::ControlGroup::SameKey same_key_;  // unset: buckets are unpacked
  std::deque<BsonObj> buffer_;
  int64_t from_control_ = 0;
  int64_t returned_ = 0;
};

// Appends the times of `bucket`'s measurements at or after `from` (all when unset) to `out`,
// decoding only its time column.
Status AppendTimesFrom(const BsonObj& bucket, const std::string& time, std::optional<int64_t> from,
                       std::vector<int64_t>* out) {
  std::vector<timeseries::BucketUnpacker::Column> cols;
  HG_ASSIGN_OR_RETURN(int64_t rows, timeseries::BucketUnpacker::Columns(bucket, time, {time}, &cols,
                                                                        /*numbers=*/true));
  const timeseries::BucketUnpacker::Column& c = cols[0];
  auto add = [&](int64_t t) {
    if (!from || t >= *from) out->push_back(t);
  };
  if (c.values != nullptr) {
    if (c.values->type != BsonType::kDate) return Status::OK();
    for (int64_t i = 0; i < rows; ++i) {
      if (c.values->missing == 0 || c.values->present[i]) {
        add(static_cast<int64_t>(c.values->values[i]));
      }
    }
    return Status::OK();
  }
  for (const BsonElement& t : c.cells) {
    if (t.type() == BsonType::kDate) add(t.DateMillis());
  }
  return Status::OK();
}

// Last-point: of the kept buckets (all of them, or the newest of each series when the scan walks
// the series index) unpacks, per series (meta values equal in canonical order), only the buckets
// that may hold one of the series' n latest measurements (for n = 1: the buckets holding its
// latest time, control.max.<time>), in read order, and passes on only the measurements at or
// after its n-th latest time. The filter is meta-only, so those are exactly the measurements the
// $sort + $group ($first, $firstN...) or $group ($top, $topN...) of the pattern can pick.
// When n is at most LatestMeasurements::kMaxDepth and the scan may use the collection's
// LatestMeasurements, those measurements come from it instead, if it is current and serves n; if
// not, what the buckets gave fills it (a scan of every series that produces whole measurements).
class LastpointStream : public pipeline::DocumentStream {
 public:
  // `time_filter`: the lower bounds on time the measurements served must pass (none: all).
  LastpointStream(std::unique_ptr<TimeseriesScan> scan, std::string time_field, int64_t n,
                  std::optional<query::Matcher> time_filter)
      : scan_(std::move(scan)),
        output_(scan_->unpack_spec()),
        time_field_(std::move(time_field)),
        n_(n),
        time_filter_(std::move(time_filter)) {}
  StatusWith<std::optional<BsonObj>> Next() override {
    if (!collected_) HG_RETURN_IF_ERROR(Collect());
    if (buffer_.empty()) return std::optional<BsonObj>();
    BsonObj out = std::move(buffer_.front());
    buffer_.pop_front();
    ++returned_;
    return std::optional<BsonObj>(std::move(out));
  }
  TimeseriesScan* scan() const { return scan_.get(); }
  const int64_t* returned() const { return &returned_; }
  // "hit", "filled", "stale" (read the buckets, could not fill) or "unused".
  const char* const* latest_cache() const { return &latest_cache_; }

 private:
  struct Series;
  struct Candidate {
    int64_t seq;
    BsonObj bucket;
    int64_t max_time = 0;
    Series* series = nullptr;  // null: a bucket without a date control.max.<time>, passed whole
  };
  struct Series {
    Series(int64_t n, const std::string& time) : bound(n, time) {}
    LatestTimeBound bound;
    std::vector<Candidate> buckets;
    std::vector<int64_t> times;  // of its candidates' rows at or after the bound (n > 1)
    std::optional<int64_t> nth;  // the n-th latest of them
  };
  struct MetaLess {
    bool operator()(const BsonObj& a, const BsonObj& b) const {
      return bson::CompareElementValues(a.FirstElement(), b.FirstElement()) < 0;
    }
  };

  // Passes on `row` (owned) as the plan's unpack spec produces it: as it is, unless it is `whole`
  // (from the cache, or unpacked whole for a fill) and the spec projects.
  void Output(BsonObj row, bool whole) {
    if (!whole || output_.spec().mode == timeseries::UnpackSpec::Mode::kAll) {
      buffer_.push_back(std::move(row));
      return;
    }
    BsonBuilder b;
    for (BsonElement e : row) {
      if (output_.Produces(e.FieldName())) b.AppendElement(e);
    }
    buffer_.push_back(b.Obj());
  }

  // The series' measurements the cache holds at or after `from`.
  void Serve(const timeseries::LatestMeasurements::Series& s, int64_t from) {
    if (!scan_->MetaMatches(s.meta)) return;
    for (size_t i = 0; i < s.rows.size(); ++i) {
      if (s.times[i] >= from && Passes(s.rows[i])) Output(s.rows[i], true);
    }
  }

  Status Collect() {
    collected_ = true;
    timeseries::LatestMeasurements* cache =
        n_ <= timeseries::LatestMeasurements::kMaxDepth ? scan_->latest_cache() : nullptr;
    timeseries::LatestMeasurements::Ticket ticket;
    const catalog::Collection& buckets = *scan_->collection().buckets;
    // A fill needs every series; it keeps whole measurements, which this read then projects.
    bool fill = cache != nullptr && !scan_->has_meta_filter();
    if (cache != nullptr &&
        cache->Read(
            buckets.UntrackedWrites(), n_, fill,
            [&](const timeseries::LatestMeasurements::Series& s, int64_t from) { Serve(s, from); },
            &ticket)) {
      latest_cache_ = "hit";
      ++GlobalTimeseriesReadCounters().latest_cache_hits;
      return Status::OK();
    }
    fill = fill && ticket.fill_wanted;  // not to unpack whole buckets for a fill taken as nothing
    if (fill) scan_->ProduceWholeMeasurements();
    const bool whole = fill;
    std::map<BsonObj, Series, MetaLess> series;
    std::vector<Candidate> kept;  // buckets whose latest time is unknown, then every candidate
    int64_t seq = 0;
    while (true) {
      bool whole = false;
      HG_ASSIGN_OR_RETURN(auto bucket, scan_->NextBucket(&whole));
      if (!bucket) break;
      BsonBuilder key;
      BsonElement meta = (*bucket)["meta"];
      if (meta.eoo()) {
        key.AppendNull("");  // $group and $sort treat a missing meta as null
      } else {
        key.AppendElementAs(meta, "");
      }
      Candidate c{seq++, std::move(*bucket), 0, nullptr};
      Series& s = series.try_emplace(key.Obj(), n_, time_field_).first->second;
      std::optional<int64_t> max_time = s.bound.MaxTime(c.bucket);
      if (!max_time) {
        kept.push_back(std::move(c));
        continue;
      }
      if (!s.bound.MayHold(*max_time)) continue;
      s.bound.Add(c.bucket);
      c.max_time = *max_time;
      s.buckets.push_back(std::move(c));
      const int64_t bound = s.bound.Bound().value_or(std::numeric_limits<int64_t>::min());
      std::erase_if(s.buckets, [&](const Candidate& x) { return x.max_time < bound; });
    }
    for (auto& [meta, s] : series) {
      for (Candidate& c : s.buckets) {
        c.series = &s;
        kept.push_back(std::move(c));
      }
    }
    std::sort(kept.begin(), kept.end(),
              [](const Candidate& a, const Candidate& b) { return a.seq < b.seq; });
    if (n_ > 1) {
      // The series' n-th latest time, from the candidates' time columns alone: only the rows at
      // or after it are built. (For n = 1 the bound, the latest control.max, is that time.)
      for (Candidate& c : kept) {
        if (c.series == nullptr) continue;
        HG_RETURN_IF_ERROR(
            AppendTimesFrom(c.bucket, time_field_, c.series->bound.Bound(), &c.series->times));
      }
      for (auto& [meta, s] : series) {
        if (static_cast<int64_t>(s.times.size()) < n_) continue;
        auto nth = s.times.begin() + (n_ - 1);
        std::nth_element(s.times.begin(), nth, s.times.end(), std::greater<>());
        s.nth = *nth;
      }
    }
    std::vector<timeseries::LatestMeasurements::Series> found;
    for (const Candidate& c : kept) {
      // Only the measurements at or after the series' n-th latest time can come first: pass
      // just those (all of them, in read order, so ties resolve as over every measurement).
      const std::optional<int64_t> from = c.series == nullptr ? std::nullopt
                                          : c.series->nth     ? c.series->nth
                                                              : c.series->bound.Bound();
      auto recent = [&](const BsonElement& t) {
        return t.type() == BsonType::kDate && (!from || t.DateMillis() >= *from);
      };
      fill = fill && c.series != nullptr;
      timeseries::LatestMeasurements::Series* f = nullptr;
      if (fill) {
        BsonBuilder meta;
        if (BsonElement m = c.bucket["meta"]; !m.eoo()) meta.AppendElement(m);
        found.push_back({meta.Obj(), c.max_time, {}, {}});
        f = &found.back();
      }
      HG_RETURN_IF_ERROR(scan_->UnpackBucket(
          c.bucket, true,
          [&](const BsonObj& m) {
            BsonObj row = m.Owned();
            if (f != nullptr) f->rows.push_back(row);
            if (Passes(row)) Output(std::move(row), whole);
          },
          c.series ? std::function<bool(const BsonElement&)>(recent) : nullptr));
    }
    if (cache != nullptr) latest_cache_ = fill ? "filled" : "stale";
    if (fill) cache->Fill(ticket, buckets.UntrackedWrites(), std::move(found));
    return Status::OK();
  }

  bool Passes(const BsonObj& m) const { return !time_filter_ || time_filter_->Matches(m); }

  std::unique_ptr<TimeseriesScan> scan_;
  timeseries::BucketUnpacker output_;  // the plan's unpack spec (its Produces)
  std::string time_field_;
  int64_t n_;
  std::optional<query::Matcher> time_filter_;
  bool collected_ = false;
  std::deque<BsonObj> buffer_;
  int64_t returned_ = 0;
  const char* latest_cache_ = "unused";
};

// Counts what a stream produces.
class CountedStream : public pipeline::DocumentStream, public pipeline::BlockSource {
 public:
  explicit CountedStream(std::unique_ptr<TimeseriesScan> in) : in_(std::move(in)) {}
  StatusWith<std::optional<BsonObj>> Next() override {
    auto next = in_->Next();
    if (next.ok() && next.value()) ++n_;
    return next;
  }
  // The scan's column blocks, counting the rows they pass on.
  pipeline::BlockSource* AsBlockSource() override {
    return in_->AsBlockSource() != nullptr ? this : nullptr;
  }
  void RequireFields(const std::vector<std::string>& names) override { in_->RequireFields(names); }
  void AcceptBounds(const std::vector<std::string>& names) override { in_->AcceptBounds(names); }
  StatusWith<const pipeline::ColumnBlock::Field*> DecodeBounded(std::string_view name) override {
    return in_->DecodeBounded(name);
  }
  StatusWith<const pipeline::ColumnBlock*> NextBlock() override {
    HG_ASSIGN_OR_RETURN(const pipeline::ColumnBlock* block, in_->NextBlock());
    if (block != nullptr) n_ += block->SelectedRows();
    return block;
  }
  bool DetachBlocks() override { return in_->DetachBlocks(); }
  ThreadContext HandOff() override { return in_->HandOff(); }
  StatusWith<std::unique_ptr<pipeline::DetachedBlock>> NextDetachedBlock(int leave) override {
    HG_ASSIGN_OR_RETURN(std::unique_ptr<pipeline::DetachedBlock> block,
                        in_->NextDetachedBlock(leave));
    if (block != nullptr) n_ += block->block().SelectedRows();
    return block;
  }
  TimeseriesScan* scan() const { return in_.get(); }
  const int64_t* returned() const { return &n_; }

 private:
  std::unique_ptr<TimeseriesScan> in_;
  int64_t n_ = 0;
};

}  // namespace

BsonObj StageOf(std::string_view name, const BsonObj& spec) {
  BsonBuilder b;
  b.AppendObject(name, spec);
  return b.Obj();
}

namespace {
// For a $setWindowFields whose sortBy is {T: 1}: its partitionBy ({"": <expression>}) when that
// is an expression of the metaField alone, {} when it has none; nullopt for any other stage or
// partition.
std::optional<BsonObj> WindowOrderedByTime(const BsonObj& stage, const std::string& time,
                                           const std::optional<std::string>& meta) {
  BsonElement w = stage.FirstElement();
  if (w.FieldName() != "$setWindowFields" || w.type() != BsonType::kObject) return std::nullopt;
  BsonElement sort_by = w.Obj()["sortBy"];
  if (sort_by.type() != BsonType::kObject || sort_by.Obj().NumFields() != 1) return std::nullopt;
  BsonElement key = sort_by.Obj().FirstElement();
  if (key.FieldName() != time || !key.IsNumber() || key.NumberDouble() != 1) return std::nullopt;
  BsonElement partition = w.Obj()["partitionBy"];
  if (partition.eoo()) return BsonObj();
  if (!meta || !MetaOnlyExpression(partition, *meta)) return std::nullopt;
  BsonBuilder b;
  b.AppendElementAs(partition, "");
  return b.Obj();
}
}  // namespace

bool TimeseriesRewritesEnabled() { return RewritesParameter()->GetBool(); }
bool NewestBinsReadAllowed(const BsonObj& hint) {
  return hint.IsEmpty() && TimeseriesRewritesEnabled() && BucketFiltersParameter()->GetBool();
}
void RegisterTimeseriesRewriteParameter() {
  (void)RewritesParameter();
  (void)BucketFiltersParameter();
  (void)LatestCacheParameter();
}

TimeseriesReadPlan PlanTimeseriesRead(const timeseries::TimeseriesOptions& options,
                                      const BsonObj& filter, const std::vector<BsonObj>& stages,
                                      bool rewrites, const BsonObj& find_projection,
                                      const query::ExpressionContext& expr_ctx,
                                      const query::Matcher* parsed,
                                      std::shared_ptr<const bson::StringComparator> collation) {
  TimeseriesReadPlan plan;
  plan.filter = filter;
  plan.rest = stages;
  plan.scan.expr_ctx = expr_ctx;
  // Without bucket-level filters nothing else is pushed down either: unpack everything.
  plan.scan.bucket_level_filter = BucketFiltersParameter()->GetBool();
  plan.scan.latest_cache = LatestCacheParameter()->GetBool();
  if (!rewrites || !plan.scan.bucket_level_filter) return plan;
  // Under a collation (the read's or the collection's) only the rewrites that compare no strings
  // stay: the block paths, last-point, the control-answered $group and the window partitions by
  // series compare strings (or metas) by their bytes.
  const bool collated = expr_ctx.collator != nullptr || collation != nullptr;
  plan.scan.use_whole_bucket_filter = true;
  plan.scan.allow_blocks = !collated;
  plan.scan.filter_on_columns = !collated;
  const std::string& time = options.time_field;
  const auto spec = timeseries::BucketFilterSpec::Of(options, expr_ctx, std::move(collation));
  auto bucket_filter = parsed != nullptr ? timeseries::BucketFilter::Make(filter, *parsed, spec)
                                         : timeseries::BucketFilter::Make(filter, spec);
  if (!bucket_filter.ok()) return plan;             // the scan reports the error
  plan.scan.bucket_filter = bucket_filter.value();  // the scan's: the filter is parsed once
  const bool meta_only = bucket_filter.value().meta_only();
  pipeline::FieldDependencies filter_deps;
  if (!meta_only) filter_deps = pipeline::FilterDependencies(filter);

  std::optional<LastpointPattern> lastpoint;
  std::optional<LastpointFilterParts> parts;
  if (options.meta_field && !meta_only && !collated) {
    parts = SplitLastpointFilter(filter, time, *options.meta_field);
  }
  if (options.meta_field && (meta_only || parts) && !collated) {
    lastpoint = MatchLastpoint(stages, time, *options.meta_field);
  }
  if (lastpoint && parts) {
    // The buckets are read under the metaField's tests alone, so the read sees each series'
    // latest measurements (and may fill the cache with them); the bounds on time come after.
    auto meta_filter = timeseries::BucketFilter::Make(parts->meta, spec);
    if (!meta_filter.ok()) lastpoint.reset();
    if (lastpoint) {
      plan.filter = parts->meta;
      plan.scan.bucket_filter = meta_filter.value();
      plan.lastpoint_time_filter = parts->time;
      filter_deps = pipeline::FilterDependencies(parts->time);
    }
  }
  if (lastpoint) {
    plan.lastpoint = true;
    plan.scan.lastpoint = true;
    plan.scan.lastpoint_n = lastpoint->n;
    plan.lastpoint_explain = lastpoint->explain;
    if (!plan.lastpoint_time_filter.IsEmpty()) {
      BsonBuilder e;
      for (BsonElement x : lastpoint->explain) e.AppendElement(x);
      e.AppendObject("timeFilter", plan.lastpoint_time_filter);
      plan.lastpoint_explain = e.Obj();
    }
  } else if (!stages.empty()) {
    BsonElement first = stages[0].FirstElement();
    if (int dir = TimeSortDirection(stages[0], time)) {
      plan.scan.sort_direction = dir;
      plan.rest.erase(plan.rest.begin());
      plan.consumed = 1;
    } else if (collated) {
      // (What follows groups or partitions by metas and control values.)
    } else if (auto partition = WindowOrderedByTime(stages[0], time, options.meta_field)) {
      plan.scan.sort_direction = 1;
      plan.scan.series_partition = *partition;
      plan.window_ordered = true;
    } else if (first.FieldName() == "$group" && first.type() == BsonType::kObject) {
      plan.control_group = timeseries::ControlGroup::Make(first.Obj(), time, options.meta_field);
      if (plan.control_group &&
          (KeyBinsFinerThanBuckets(first.Obj()["_id"], time,
                                   options.bucket_max_span_seconds * 1000) ||
           FiltersMeasurementColumns(filter, filter_deps, options, parsed, expr_ctx))) {
        plan.control_group.reset();
      }
      if (plan.control_group) {
        plan.group_spec = first.Obj();
        plan.rest.erase(plan.rest.begin());
        plan.rest.insert(plan.rest.begin(), StageOf("$group", plan.control_group->merge_group()));
        plan.consumed = 1;
        plan.prepended = 1;
      }
    } else if (first.FieldName() == "$count" && first.type() == BsonType::kString) {
      BsonBuilder g;
      g.AppendNull("_id");
      size_t o = g.OpenObject(first.Str());
      g.AppendInt32("$sum", 1);
      g.Close(o);
      // $count is the $group and $project that MongoDB runs for it: answered from control, or
      // (under a filter on measurement columns, see FiltersMeasurementColumns) a $group that
      // folds the filtered column blocks.
      const BsonObj group = g.Obj();
      const bool blocks = FiltersMeasurementColumns(filter, filter_deps, options, parsed, expr_ctx);
      if (!blocks)
        plan.control_group = timeseries::ControlGroup::Make(group, time, options.meta_field);
      if (plan.control_group || blocks) {
        BsonBuilder p;
        p.AppendInt32("_id", 0);
        p.AppendInt32(first.Str(), 1);
        plan.rest.erase(plan.rest.begin());
        plan.rest.insert(plan.rest.begin(), StageOf("$project", p.Obj()));
        plan.rest.insert(plan.rest.begin(),
                         StageOf("$group", blocks ? group : plan.control_group->merge_group()));
        if (plan.control_group) plan.group_spec = group;
        plan.consumed = 1;
        plan.prepended = 2;
      }
    }
  }

  // A $limit right after the unpack stage (or a find's limit) with no event filter: the scan
  // stops reading buckets once it holds that many measurements.
  if (meta_only && plan.scan.sort_direction == 0 && !plan.lastpoint && !plan.control_group &&
      !plan.rest.empty()) {
    BsonElement lim = plan.rest.front().FirstElement();
    if (lim.FieldName() == "$limit" && lim.IsNumber() && lim.NumberLong() > 0) {
      plan.scan.measurement_limit = lim.NumberLong();
    }
  }

  // A $limit (after any $skip) right after a $sort on time the scan does: only the first
  // skip + limit measurements in that order are wanted.
  if (plan.scan.sort_direction != 0) {
    // Counts past 2^40 are left to the stages (their sum must not overflow).
    auto count_of = [&](size_t i, std::string_view stage) -> std::optional<int64_t> {
      if (i >= plan.rest.size() || plan.rest[i].FirstElement().FieldName() != stage) {
        return std::nullopt;
      }
      std::optional<int64_t> v = plan.rest[i].FirstElement().WholeNumber();
      if (!v || *v < 0 || *v >= (int64_t{1} << 40)) return std::nullopt;
      return v;
    };
    const std::optional<int64_t> skip = count_of(0, "$skip");
    const std::optional<int64_t> limit = count_of(skip ? 1 : 0, "$limit");
    if (limit && *limit > 0) plan.scan.sort_limit = skip.value_or(0) + *limit;
  }

  // Columns: what the bucket-level stage, or the rest of the pipeline, and the filter read.
  pipeline::FieldDependencies deps;
  if (plan.control_group) {
    for (const std::string& f : plan.control_group->fields()) deps.Add(f);
  } else if (plan.lastpoint) {
    deps = pipeline::PipelineDependencies(plan.rest);
  } else {
    std::optional<std::vector<std::string>> excluded;
    if (!plan.rest.empty()) excluded = TopLevelExclusion(plan.rest.front());
    bool absorb = excluded.has_value() && !filter_deps.needs_whole_document;
    for (size_t i = 0; absorb && i < excluded->size(); ++i) {
      const std::string& n = (*excluded)[i];
      if (filter_deps.fields.count(n) || (plan.scan.sort_direction != 0 && n == time)) {
        absorb = false;
      }
    }
    if (absorb) {
      plan.scan.mode = timeseries::UnpackSpec::Mode::kExclude;
      plan.scan.fields = std::move(*excluded);
      plan.rest.erase(plan.rest.begin());
      ++plan.consumed;  // nothing was prepended on this path
      return plan;
    }
    std::vector<BsonObj> read = plan.rest;
    if (!find_projection.IsEmpty()) read.push_back(FindProjectionAsStage(find_projection));
    deps = pipeline::PipelineDependencies(read);
  }
  if (deps.needs_whole_document || filter_deps.needs_whole_document) return plan;
  deps.AddAll(filter_deps);
  if (plan.scan.sort_direction != 0) deps.Add(time);
  plan.scan.mode = timeseries::UnpackSpec::Mode::kInclude;
  plan.scan.fields.assign(deps.fields.begin(), deps.fields.end());
  return plan;
}

StatusWith<TimeseriesReadSource> OpenTimeseriesRead(timeseries::TimeseriesCollection coll,
                                                    storage::KvEngine* engine,
                                                    const TimeseriesReadPlan& plan) {
  std::string time = coll.options.time_field;
  HG_ASSIGN_OR_RETURN(auto scan,
                      TimeseriesScan::Make(std::move(coll), engine, plan.filter, plan.scan));
  TimeseriesReadSource src;
  if (plan.control_group) {
    auto s = std::make_unique<ControlGroupStream>(std::move(scan), *plan.control_group);
    src.scan = s->scan();
    src.buckets_from_control = s->from_control();
    src.source_returned = s->returned();
    src.stream = std::move(s);
  } else if (plan.lastpoint) {
    std::optional<query::Matcher> time_filter;
    if (!plan.lastpoint_time_filter.IsEmpty()) {
      HG_ASSIGN_OR_RETURN(time_filter,
                          query::Matcher::Parse(plan.lastpoint_time_filter, plan.scan.expr_ctx));
    }
    auto s = std::make_unique<LastpointStream>(std::move(scan), time, plan.scan.lastpoint_n,
                                               std::move(time_filter));
    src.scan = s->scan();
    src.source_returned = s->returned();
    src.latest_cache = s->latest_cache();
    src.stream = std::move(s);
  } else {
    auto s = std::make_unique<CountedStream>(std::move(scan));
    src.scan = s->scan();
    src.source_returned = s->returned();
    src.stream = std::move(s);
  }
  return src;
}

std::vector<BsonObj> TimeseriesFindStages(const BsonObj& sort, int64_t skip, int64_t limit) {
  std::vector<BsonObj> out;
  if (!sort.IsEmpty()) out.push_back(StageOf("$sort", sort));
  if (skip > 0) {
    BsonBuilder s;
    s.AppendInt64("$skip", skip);
    out.push_back(s.Obj());
  }
  if (limit > 0) {
    BsonBuilder s;
    s.AppendInt64("$limit", limit);
    out.push_back(s.Obj());
  }
  return out;
}

std::vector<BsonObj> TimeseriesCountStages(const BsonObj& cmd) {
  BsonElement skip = cmd["skip"], limit = cmd["limit"];
  std::vector<BsonObj> out =
      TimeseriesFindStages(BsonObj(), skip.IsNumber() ? skip.NumberLong() : 0,
                           limit.IsNumber() ? std::abs(limit.NumberLong()) : 0);
  BsonBuilder c;
  c.AppendString("$count", "n");
  out.push_back(c.Obj());
  return out;
}

std::vector<BsonObj> TimeseriesDistinctStages(std::string_view key) {
  std::string top(key.substr(0, key.find('.')));
  if (top.empty() || top[0] == '$') return {};
  BsonBuilder p;
  if (top != "_id") p.AppendInt32("_id", 0);
  p.AppendInt32(top, 1);
  return {StageOf("$project", p.Obj())};
}

query::ExpressionContext ExpressionContextOf(const pipeline::PipelineContext& pctx) {
  // Commands without $$NOW of their own (count, distinct) pass a context without one.
  query::ExpressionContext expr_ctx = query::ExpressionContext::Now();
  if (pctx.now_millis != 0) expr_ctx.now_millis = pctx.now_millis;
  expr_ctx.let = pctx.let;
  expr_ctx.collator = pctx.collator;
  return expr_ctx;
}

bool CollatedTimeseriesRead(const timeseries::TimeseriesCollection& coll,
                            const pipeline::PipelineContext& pctx) {
  return pctx.collator != nullptr || coll.buckets->DefaultCollator() != nullptr;
}

StatusWith<std::unique_ptr<pipeline::DocumentStream>> BuildTimeseriesRead(
    timeseries::TimeseriesCollection coll, storage::KvEngine* engine, TimeseriesReadRequest request,
    std::unique_ptr<pipeline::Pipeline> stages) {
  const pipeline::PipelineContext& pctx = stages->context();
  const bool collated = CollatedTimeseriesRead(coll, pctx);
  if (request.newest_bins && !collated && NewestBinsReadAllowed(request.hint)) {
    if (auto p = MatchNewestBins(stages->SourceStages(), coll.options.time_field)) {
      return BuildNewestBinsRead(std::move(coll), engine, std::move(request), std::move(stages),
                                 *p);
    }
  }
  const query::ExpressionContext expr_ctx = ExpressionContextOf(pctx);
  const query::Matcher* parsed = request.parsed_filter ? &*request.parsed_filter : nullptr;
  TimeseriesReadPlan plan = PlanTimeseriesRead(coll.options, request.filter, stages->SourceStages(),
                                               TimeseriesRewritesEnabled(), request.find_projection,
                                               expr_ctx, parsed, coll.buckets->DefaultCollator());
  plan.scan.hint = request.hint;
  plan.scan.allow_disk_use = pctx.allow_disk_use;
  plan.scan.sort_memory_limit_bytes = pctx.limits.sort;
  // The parsed filter is the whole one; a last-point read's stands apart from its bounds on time.
  if (plan.lastpoint_time_filter.IsEmpty()) {
    plan.scan.parsed_filter = std::move(request.parsed_filter);
  }
  HG_ASSIGN_OR_RETURN(TimeseriesReadSource src, OpenTimeseriesRead(std::move(coll), engine, plan));
  stages->DropLeadingSources(plan.consumed);
  if (plan.window_ordered &&
      (src.scan->in_series_order() || plan.scan.series_partition.IsEmpty())) {
    stages->FirstStageTakesOrderedInput();
  }
  if (plan.prepended > 0) {
    HG_RETURN_IF_ERROR(stages->Prepend(std::vector<BsonObj>(
        plan.rest.begin(), plan.rest.begin() + static_cast<std::ptrdiff_t>(plan.prepended))));
  }
  if (stages->IsEmpty()) return std::move(src.stream);
  return stages->Bind(std::move(src.stream));
}

StatusWith<std::unique_ptr<pipeline::DocumentStream>> BuildTimeseriesRead(
    timeseries::TimeseriesCollection coll, storage::KvEngine* engine, TimeseriesReadRequest request,
    const std::vector<BsonObj>& stages, const pipeline::PipelineContext& pctx) {
  bson::BsonArrayBuilder arr;
  for (const BsonObj& st : stages) arr.AppendObject(st);
  HG_ASSIGN_OR_RETURN(auto pipe, pipeline::Pipeline::Parse(arr.Obj(), pctx));
  return BuildTimeseriesRead(std::move(coll), engine, std::move(request), std::move(pipe));
}

}  // namespace hourglass::exec
