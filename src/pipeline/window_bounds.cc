#include "pipeline/window_bounds.h"

#include <algorithm>
#include <cmath>

#include "pipeline/errors.h"
#include "pipeline/expression.h"
#include "pipeline/expression_internal.h"

namespace hourglass::pipeline {

using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;

StatusWith<TimeUnit> ParseTimeUnit(std::string_view name) {
  if (std::optional<TimeUnit> unit = internal::TimeUnitFromName(name)) return *unit;
  return Status(ErrorCode::kFailedToParse, "unknown time unit value: " + std::string(name));
}

int64_t AddTimeUnits(int64_t millis, TimeUnit unit, int64_t amount) {
  StatusWith<int64_t> r = internal::DateAdd(millis, unit, amount, internal::TimeZone());
  if (r.ok()) return r.value();
  // DateAdd fails only when the result leaves the date range, in the direction of `amount`.
  return amount > 0 ? INT64_MAX : INT64_MIN;
}

namespace {

Status ParseError(std::string reason) {
  return Status(ErrorCode::kFailedToParse, std::move(reason));
}

StatusWith<WindowBound> ParseWindowBound(const BsonElement& e, bool integral_only, bool documents) {
  WindowBound b;
  if (e.type() == BsonType::kString) {
    if (e.Str() == "unbounded") return b;
    if (e.Str() == "current") {
      b.kind = WindowBound::kCurrent;
      return b;
    }
    return ParseError("Window bounds must be 'unbounded', 'current', or a number.");
  }
  HG_ASSIGN_OR_RETURN(ExpressionPtr expr, Expression::ParseExpression(e, ParseContext()));
  const Value* c = expr->ConstantValue();
  if (c == nullptr) return ParseError("Window bounds expression must be a constant.");
  if (!c->numeric()) {
    return ParseError(documents ? "Numeric document-based bounds must be an integer"
                                : "Range-based bounds expression must be a number");
  }
  const double d = c->NumberDouble();
  // MongoDB's integral bounds are 32-bit integers.
  if (integral_only && (!std::isfinite(d) || d != std::floor(d) || std::fabs(d) > 2147483647.0)) {
    return ParseError(documents ? "Numeric document-based bounds must be an integer"
                                : "With 'unit', range-based bounds must be an integer");
  }
  b.kind = WindowBound::kOffset;
  b.offset = d;
  b.n = integral_only ? static_cast<int64_t>(d) : 0;
  return b;
}

Status CheckForward(const WindowBound& lower, const WindowBound& upper) {
  auto norm = [](const WindowBound& b) { return b.kind == WindowBound::kCurrent ? 0.0 : b.offset; };
  if (lower.kind != WindowBound::kUnbounded && upper.kind != WindowBound::kUnbounded &&
      norm(lower) > norm(upper)) {
    return PipelineError(5339900, "Lower bound must not exceed upper bound");
  }
  return Status::OK();
}

}  // namespace

StatusWith<WindowBounds> ParseWindowBounds(const BsonElement& arg, const WindowSortInfo& sort) {
  if (arg.type() != BsonType::kObject) return ParseError("'window' field must be an object");
  BsonObj obj = arg.Obj();
  BsonElement documents = obj["documents"];
  BsonElement range = obj["range"];
  BsonElement unit = obj["unit"];
  const bool has_docs = !documents.eoo(), has_range = !range.eoo(), has_unit = !unit.eoo();
  if (has_docs && has_range) {
    return ParseError("Window bounds can specify either 'documents' or 'unit', not both.");
  }
  if (!has_range && has_unit) {
    return ParseError("Window bounds can only specify 'unit' with range-based bounds.");
  }
  WindowBounds w;
  if (!has_docs && !has_range) {
    if (!obj.IsEmpty()) {
      return ParseError(
          "'window' field can only contain 'documents' as the only argument or 'range' with an "
          "optional 'unit' field");
    }
    return w;
  }
  const BsonElement& bounds = has_docs ? documents : range;
  if (bounds.type() != BsonType::kArray || bounds.Obj().NumFields() != 2) {
    return ParseError("Window bounds must be a 2-element array: " +
                      Value::FromElement(bounds).ToString());
  }
  if (obj.NumFields() != (has_unit ? 2 : 1)) {
    return ParseError(has_docs ? "'window' field that specifies documents cannot have other fields"
                               : "'window' field that specifies range cannot have other fields "
                                 "besides 'unit'");
  }
  BsonObj pair = bounds.Obj();
  auto it = pair.begin();
  BsonElement lo = *it;
  ++it;
  BsonElement hi = *it;
  w.range = has_range;
  if (has_unit) {
    if (unit.type() != BsonType::kString) return ParseError("'unit' must be a string");
    HG_ASSIGN_OR_RETURN(TimeUnit u, ParseTimeUnit(unit.Str()));
    w.unit = u;
  }
  HG_ASSIGN_OR_RETURN(w.lower, ParseWindowBound(lo, has_docs || has_unit, has_docs));
  HG_ASSIGN_OR_RETURN(w.upper, ParseWindowBound(hi, has_docs || has_unit, has_docs));
  HG_RETURN_IF_ERROR(CheckForward(w.lower, w.upper));
  if (has_docs) {
    if (!w.Unbounded() && !sort.present) {
      return PipelineError(5339901, "Document-based bounds require a sortBy");
    }
    return w;
  }
  if (!sort.present || sort.num_keys != 1) {
    return PipelineError(5339902, "Range-based bounds require sortBy a single field");
  }
  if (!sort.ascending) {
    return PipelineError(8947401, "Range-based bounds require an ascending sortBy");
  }
  return w;
}

Status WindowIndexer::Prepare(const WindowPartition& p) {
  n_ = p.docs.size();
  if (!w_.range) return Status::OK();
  keys_.clear();
  for (const Value& v : p.sort_values) {
    if (w_.unit) {
      if (!v.IsDate()) {
        return PipelineError(5429513,
                             "Invalid range: Expected the sortBy field to be a Date, but it "
                             "was " +
                                 std::string(bson::TypeName(v.type())));
      }
      keys_.push_back(static_cast<double>(v.DateMillis()));
    } else {
      if (v.IsDate()) {
        return PipelineError(5429413,
                             "Invalid range: For windows that involve date or time ranges, a unit "
                             "must be provided.");
      }
      if (!v.numeric()) {
        return PipelineError(5429414,
                             "Invalid range: Expected the sortBy field to be a number, but it "
                             "was " +
                                 std::string(bson::TypeName(v.type())));
      }
      keys_.push_back(v.NumberDouble());
    }
  }
  return Status::OK();
}

void WindowIndexer::Bounds(size_t i, size_t* lo, size_t* hi) const {
  if (!w_.range) {
    auto pos = [&](const WindowBound& b, bool upper) -> int64_t {
      if (b.kind == WindowBound::kUnbounded) return upper ? static_cast<int64_t>(n_) : 0;
      const int64_t at = static_cast<int64_t>(i) + (b.kind == WindowBound::kOffset ? b.n : 0);
      return upper ? at + 1 : at;
    };
    auto clamp = [&](int64_t v) {
      return static_cast<size_t>(std::clamp<int64_t>(v, 0, static_cast<int64_t>(n_)));
    };
    *lo = clamp(pos(w_.lower, false));
    *hi = std::max(*lo, clamp(pos(w_.upper, true)));
    return;
  }
  const double x = keys_[i];
  auto target = [&](const WindowBound& b) {
    if (b.kind == WindowBound::kCurrent) return x;
    if (w_.unit) {
      return static_cast<double>(AddTimeUnits(static_cast<int64_t>(x), *w_.unit, b.n));
    }
    return x + b.offset;
  };
  *lo = w_.lower.kind == WindowBound::kUnbounded
            ? 0
            : std::lower_bound(keys_.begin(), keys_.end(), target(w_.lower)) - keys_.begin();
  *hi = w_.upper.kind == WindowBound::kUnbounded
            ? n_
            : std::upper_bound(keys_.begin(), keys_.end(), target(w_.upper)) - keys_.begin();
  *hi = std::max(*hi, *lo);
}

PartitionDocs::PartitionDocs() = default;
PartitionDocs::~PartitionDocs() = default;
PartitionDocs::PartitionDocs(PartitionDocs&&) noexcept = default;
PartitionDocs& PartitionDocs::operator=(PartitionDocs&&) noexcept = default;

Status PartitionDocs::Add(bson::BsonObj doc) {
  ++size_;
  if (!file_) {
    docs_.push_back(std::move(doc));
    return Status::OK();
  }
  offsets_.push_back(file_->size());
  return file_->Append(doc);
}

Status PartitionDocs::Spill(const std::string& dir) {
  if (file_) return Status::OK();
  file_ = std::make_unique<SpillFile>(dir, "window");
  for (const auto& d : docs_) {
    offsets_.push_back(file_->size());
    HG_RETURN_IF_ERROR(file_->Append(d));
  }
  docs_.clear();
  docs_.shrink_to_fit();
  return Status::OK();
}

Status PartitionDocs::Seal() { return file_ ? file_->Flush() : Status::OK(); }

StatusWith<bson::BsonObj> PartitionDocs::Get(size_t i) const {
  if (!file_) return docs_[i];
  if (!reader_ || next_ != i) reader_ = file_->Read(offsets_[i], file_->size());
  HG_ASSIGN_OR_RETURN(auto doc, reader_->Next());
  if (!doc) return Status(ErrorCode::kInternalError, "truncated window spill file");
  next_ = i + 1;
  return *doc;
}

}  // namespace hourglass::pipeline
