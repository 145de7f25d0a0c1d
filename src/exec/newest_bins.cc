#include "exec/newest_bins.h"

#include <utility>

#include "bson/bson_compare.h"
#include "catalog/record_store.h"
#include "pipeline/expression.h"
#include "pipeline/group_block.h"
#include "storage/record_id.h"
#include "timeseries/bucket_filter.h"

namespace hourglass::exec {

using bson::BsonBuilder;
using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;

namespace {

constexpr int kMaxWindows = 6;  // widenings before the stages run over everything

bool IsConstantArgument(const BsonElement& a) {
  if (a.type() == BsonType::kString) return !a.Str().starts_with('$');
  return a.type() != BsonType::kObject && a.type() != BsonType::kArray;
}

// The stream: on the first pull, finds the N newest bins by windows, then runs the stages after
// the $limit over them.
class NewestBinsStream : public pipeline::DocumentStream {
 public:
  NewestBinsStream(timeseries::TimeseriesCollection coll, storage::KvEngine* engine,
                   TimeseriesReadRequest request, std::unique_ptr<pipeline::Pipeline> stages,
                   NewestBinsPattern pattern)
      : coll_(std::move(coll)),
        engine_(engine),
        request_(std::move(request)),
        stages_(std::move(stages)),
        pattern_(std::move(pattern)) {}

  StatusWith<std::optional<BsonObj>> Next() override {
    if (!out_) HG_RETURN_IF_ERROR(Run());
    return out_->Next();
  }

  // Finds the N newest groups, and returns where the read settled.
  StatusWith<NewestBinsWindow> FindWindow() {
    window_only_ = true;
    HG_RETURN_IF_ERROR(NewestGroups().status());
    return window_;
  }

 private:
  // [oldest time, a time past the newest] of the collection's buckets, by the first bucket of
  // the clustered order each way; nullopt when there is none or the keys are not in time order
  // (times before 1970 or past 2106 wrap).
  using Span = std::optional<std::pair<int64_t, int64_t>>;
  StatusWith<Span> DataSpan() {
    auto session = engine_->NewSession();
    const std::string min_path = "control.min." + coll_.options.time_field;
    int64_t lo = 0, hi = 0;
    for (bool forward : {false, true}) {
      auto cursor =
          catalog::RecordCursor::Open(*session, *coll_.buckets, catalog::RecordRange::All(forward));
      if (!cursor.ok()) {
        if (cursor.status().code() == ErrorCode::kNamespaceNotFound) return Span();
        return cursor.status();
      }
      HG_ASSIGN_OR_RETURN(bool any, cursor.value().Next());
      if (!any || storage::ClusteredRecordIdSeconds(cursor.value().id()) >= 0x80000000u) {
        return Span();
      }
      BsonElement t = cursor.value().doc().GetPath(min_path);
      if (t.type() != BsonType::kDate) return Span();
      if (forward) {
        lo = t.DateMillis();
      } else {
        // Buckets hold times below their start (the key's seconds, rounded down) + maxSpan: the
        // clustered time ranges of every time-range read rest on it too.
        const int64_t key_s = storage::ClusteredRecordIdSeconds(cursor.value().id());
        hi = (key_s + coll_.options.bucket_max_span_seconds + 1) * 1000;
      }
    }
    return Span(std::make_pair(lo, hi));
  }

  // The three stages over the measurements of `filter`.
  StatusWith<std::vector<BsonObj>> Groups(TimeseriesReadRequest request) {
    const std::vector<BsonObj> head(stages_->SourceStages().begin(),
                                    stages_->SourceStages().begin() + 3);
    request.newest_bins = false;
    HG_ASSIGN_OR_RETURN(auto stream, BuildTimeseriesRead(coll_, engine_, std::move(request), head,
                                                         stages_->context()));
    return pipeline::DrainStream(*stream);
  }

  // The N newest groups, from the narrowest window that settles them.
  StatusWith<std::vector<BsonObj>> NewestGroups() {
    const pipeline::PipelineContext& pctx = stages_->context();
    const query::ExpressionContext expr_ctx = ExpressionContextOf(pctx);
    auto filter = timeseries::BucketFilter::Make(
        request_.filter, timeseries::BucketFilterSpec::Of(coll_.options, expr_ctx,
                                                          coll_.buckets->DefaultCollator()));
    HG_ASSIGN_OR_RETURN(auto span, DataSpan());
    if (!filter.ok() || !span) {
      if (window_only_) return std::vector<BsonObj>();
      return Groups(std::move(request_));
    }
    auto [lo, hi] = *span;
    if (auto f_lo = filter.value().min_time_millis()) lo = std::max(lo, *f_lo);
    if (auto f_hi = filter.value().max_time_millis()) hi = std::min(hi, *f_hi);
    HG_ASSIGN_OR_RETURN(auto bin_of,
                        pipeline::Expression::ParseExpression(pattern_.id.FirstElement(),
                                                              pipeline::ParseContext(pctx.let)));
    const std::string& time = coll_.options.time_field;
    int64_t width = (pattern_.limit + 1) * pattern_.min_width_ms;
    // A window past half the span reads about what the whole would: read the whole instead.
    for (int i = 0; i < kMaxWindows && width < (hi - lo) / 2; ++i, width *= 2) {
      const int64_t from = hi - width;
      // Bounded on both sides, the window reads only the buckets that can hold it.
      TimeseriesReadRequest request;
      request.filter = NewestBinsWindowFilter(request_.filter, time, from, hi);
      ++window_.windows;
      HG_ASSIGN_OR_RETURN(std::vector<BsonObj> groups, Groups(std::move(request)));
      if (static_cast<int64_t>(groups.size()) < pattern_.limit) continue;
      // The bin holding `from` may have rows before it: the groups must all be newer.
      BsonBuilder at;
      at.AppendDate(time, from);
      pipeline::Variables vars(pctx.now_millis);
      HG_ASSIGN_OR_RETURN(pipeline::Value from_bin, bin_of->Evaluate(at.Obj(), vars));
      if (bson::CompareElementValues(groups.back()["_id"], from_bin.element()) > 0) {
        ++GlobalTimeseriesReadCounters().newest_bins_windows;
        window_.settled = true;
        window_.from = from;
        window_.to = hi;
        return groups;
      }
    }
    if (window_only_) return std::vector<BsonObj>();
    return Groups(std::move(request_));
  }

  Status Run() {
    HG_ASSIGN_OR_RETURN(std::vector<BsonObj> groups, NewestGroups());
    auto source = std::make_unique<pipeline::VectorDocumentStream>(std::move(groups));
    stages_->DropLeadingSources(3);
    out_ = stages_->IsEmpty() ? std::move(source) : stages_->Bind(std::move(source));
    return Status::OK();
  }

  timeseries::TimeseriesCollection coll_;
  storage::KvEngine* engine_;
  TimeseriesReadRequest request_;
  std::unique_ptr<pipeline::Pipeline> stages_;
  NewestBinsPattern pattern_;
  NewestBinsWindow window_;
  bool window_only_ = false;  // FindWindow: no read of everything when no window settles
  std::unique_ptr<pipeline::DocumentStream> out_;
};

}  // namespace

std::optional<NewestBinsPattern> MatchNewestBins(const std::vector<BsonObj>& stages,
                                                 const std::string& time) {
  if (stages.size() < 3) return std::nullopt;
  BsonElement g = stages[0].FirstElement();
  if (g.FieldName() != "$group" || g.type() != BsonType::kObject) return std::nullopt;
  BsonElement id = g.Obj()["_id"];
  if (id.type() != BsonType::kObject || id.Obj().NumFields() != 1) return std::nullopt;
  BsonElement trunc = id.Obj().FirstElement();
  if (trunc.FieldName() != "$dateTrunc" || trunc.type() != BsonType::kObject) return std::nullopt;
  bool on_time = false;
  for (const BsonElement& a : trunc.Obj()) {
    if (a.FieldName() == "date") {
      on_time = a.type() == BsonType::kString && a.Str() == "$" + time;
    } else if (!IsConstantArgument(a)) {
      return std::nullopt;
    }
  }
  const int64_t width = pipeline::DateTruncBinsOf(trunc.Obj()).min_width;
  if (!on_time || width <= 0) return std::nullopt;
  BsonElement s = stages[1].FirstElement();
  if (s.FieldName() != "$sort" || s.type() != BsonType::kObject || s.Obj().NumFields() != 1 ||
      s.Obj().FirstElement().FieldName() != "_id" || !s.Obj().FirstElement().IsNumber() ||
      s.Obj().FirstElement().NumberDouble() != -1) {
    return std::nullopt;
  }
  BsonElement l = stages[2].FirstElement();
  const std::optional<int64_t> limit = l.WholeNumber();
  if (l.FieldName() != "$limit" || !limit || *limit < 1 || *limit > 1'000'000) {
    return std::nullopt;
  }
  NewestBinsPattern p;
  p.limit = *limit;
  p.min_width_ms = width;
  BsonBuilder b;
  b.AppendElement(id);
  p.id = b.Obj();
  return p;
}

BsonObj NewestBinsWindowFilter(const BsonObj& filter, const std::string& time, int64_t from,
                               int64_t to) {
  BsonBuilder window;
  size_t t = window.OpenObject(time);
  window.AppendDate("$gte", from);
  window.AppendDate("$lte", to);
  window.Close(t);
  if (filter.IsEmpty()) return window.Obj();
  BsonBuilder both;
  size_t a = both.OpenArray("$and");
  both.AppendObject("0", filter);
  both.AppendObject("1", window.Obj());
  both.Close(a);
  return both.Obj();
}

StatusWith<NewestBinsWindow> FindNewestBinsWindow(timeseries::TimeseriesCollection coll,
                                                  storage::KvEngine* engine,
                                                  TimeseriesReadRequest request,
                                                  std::unique_ptr<pipeline::Pipeline> stages,
                                                  const NewestBinsPattern& pattern) {
  NewestBinsStream read(std::move(coll), engine, std::move(request), std::move(stages), pattern);
  return read.FindWindow();
}

StatusWith<std::unique_ptr<pipeline::DocumentStream>> BuildNewestBinsRead(
    timeseries::TimeseriesCollection coll, storage::KvEngine* engine, TimeseriesReadRequest request,
    std::unique_ptr<pipeline::Pipeline> stages, const NewestBinsPattern& pattern) {
  return std::unique_ptr<pipeline::DocumentStream>(std::make_unique<NewestBinsStream>(
      std::move(coll), engine, std::move(request), std::move(stages), pattern));
}

}  // namespace hourglass::exec
