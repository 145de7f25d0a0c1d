// Streaming and buffering stages that need no accumulators or projections: $match, $limit,
// $skip, $count, $sort, $unwind, $replaceRoot/$replaceWith, $sample, $documents, $facet.
#include <algorithm>
#include <cmath>
#include <deque>
#include <random>

#include "bson/field_check.h"
#include "pipeline/external_sorter.h"
#include "pipeline/query_hooks.h"
#include "pipeline/stage.h"
#include "query/matcher.h"
#include "query/path.h"
#include "query/sort.h"

namespace hourglass::pipeline {

using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;
using OptDoc = std::optional<BsonObj>;

namespace {

std::string StageSpecJson(const BsonElement& spec) {
  bson::BsonBuilder b;
  b.AppendElement(spec);
  return b.Obj().ToJson();
}

// ---- $match ----

class MatchStage : public Stage {
 public:
  MatchStage(BsonObj filter, query::Matcher matcher)
      : filter_(std::move(filter)), matcher_(std::move(matcher)) {}
  std::string_view name() const override { return "$match"; }
  // The query layer runs every filter, $expr included (through query_hooks.cc).
  Pipeline::LeadingMatch pushable() const { return {filter_, matcher_}; }

  StatusWith<bool> Matches(const BsonObj& doc) const { return matcher_.Evaluate(doc); }

  std::unique_ptr<DocumentStream> Bind(std::unique_ptr<DocumentStream> input) const override {
    class Stream : public DocumentStream {
     public:
      Stream(std::shared_ptr<const MatchStage> s, std::unique_ptr<DocumentStream> in)
          : s_(std::move(s)), in_(std::move(in)) {}
      StatusWith<OptDoc> Next() override {
        while (true) {
          HG_ASSIGN_OR_RETURN(OptDoc d, in_->Next());
          if (!d) return d;
          HG_ASSIGN_OR_RETURN(bool ok, s_->Matches(*d));
          if (ok) return d;
        }
      }

     private:
      std::shared_ptr<const MatchStage> s_;
      std::unique_ptr<DocumentStream> in_;
    };
    return std::make_unique<Stream>(Self(this), std::move(input));
  }

 private:
  BsonObj filter_;
  query::Matcher matcher_;
};

// ---- $limit / $skip ----

class LimitSkipStage : public Stage {
 public:
  LimitSkipStage(bool is_limit, int64_t n) : is_limit_(is_limit), n_(n) {}
  std::string_view name() const override { return is_limit_ ? "$limit" : "$skip"; }
  bool is_limit() const { return is_limit_; }
  int64_t n() const { return n_; }
  std::unique_ptr<DocumentStream> Bind(std::unique_ptr<DocumentStream> input) const override {
    class Stream : public DocumentStream {
     public:
      Stream(bool is_limit, int64_t n, std::unique_ptr<DocumentStream> in)
          : is_limit_(is_limit), n_(n), in_(std::move(in)) {}
      StatusWith<OptDoc> Next() override {
        if (is_limit_) {
          if (seen_ >= n_) return OptDoc();
          ++seen_;
          return in_->Next();
        }
        while (seen_ < n_) {
          HG_ASSIGN_OR_RETURN(OptDoc d, in_->Next());
          if (!d) return d;
          ++seen_;
        }
        return in_->Next();
      }

     private:
      bool is_limit_;
      int64_t n_;
      int64_t seen_ = 0;
      std::unique_ptr<DocumentStream> in_;
    };
    return std::make_unique<Stream>(is_limit_, n_, std::move(input));
  }

 private:
  bool is_limit_;
  int64_t n_;
};

StatusWith<int64_t> ParseWholeNumber(const BsonElement& spec, int type_code, const char* type_msg) {
  if (!spec.IsNumber()) return PipelineError(type_code, type_msg);
  double d = spec.NumberDouble();
  if (d != std::trunc(d) || std::isnan(d)) {
    return PipelineError(type_code, std::string(type_msg) + ", and cannot be a fraction");
  }
  return spec.NumberLong();
}

// ---- $count ----

class CountStage : public Stage {
 public:
  explicit CountStage(std::string field) : field_(std::move(field)) {}
  std::string_view name() const override { return "$count"; }
  std::unique_ptr<DocumentStream> Bind(std::unique_ptr<DocumentStream> input) const override {
    class Stream : public DocumentStream {
     public:
      Stream(std::string field, std::unique_ptr<DocumentStream> in)
          : field_(std::move(field)), in_(std::move(in)) {}
      StatusWith<OptDoc> Next() override {
        if (done_) return OptDoc();
        done_ = true;
        int64_t n = 0;
        while (true) {
          HG_ASSIGN_OR_RETURN(OptDoc d, in_->Next());
          if (!d) break;
          ++n;
        }
        if (n == 0) return OptDoc();
        bson::BsonBuilder b;
        Value::IntOrLong(n).AppendTo(b, field_);
        return OptDoc(b.Obj());
      }

     private:
      std::string field_;
      std::unique_ptr<DocumentStream> in_;
      bool done_ = false;
    };
    return std::make_unique<Stream>(field_, std::move(input));
  }

 private:
  std::string field_;
};

// ---- $sort ----

class SortStage : public Stage {
 public:
  // `limit` > 0: only the first `limit` documents are wanted (a following $limit; top-k).
  SortStage(query::SortPattern pattern, PipelineContext ctx, int64_t limit = 0)
      : pattern_(std::move(pattern)), ctx_(std::move(ctx)), limit_(limit) {}
  std::string_view name() const override { return "$sort"; }
  const query::SortPattern& pattern() const { return pattern_; }
  const PipelineContext& ctx() const { return ctx_; }
  int64_t limit() const { return limit_; }

  std::unique_ptr<DocumentStream> Bind(std::unique_ptr<DocumentStream> input) const override {
    class Stream : public DocumentStream {
     public:
      Stream(std::shared_ptr<const SortStage> s, std::unique_ptr<DocumentStream> in)
          : s_(std::move(s)), in_(std::move(in)), sorter_(MakeSorter(*s_)) {}
      StatusWith<OptDoc> Next() override {
        if (!loaded_) {
          loaded_ = true;
          HG_ASSIGN_OR_RETURN(bool ordered, TakeOrderedInput());
          if (!ordered) HG_RETURN_IF_ERROR(Load());
        }
        if (ordered_) return NextOrdered();
        HG_ASSIGN_OR_RETURN(std::optional<SortRow> row, sorter_.Next());
        if (!row) return OptDoc();
        return OptDoc(std::move(row->doc));
      }

     private:
      // Sorts the input, after the documents already taken from it (held_).
      Status Load() {
        int64_t keys = 0, bytes = 0;
        auto add = [&](BsonObj d) {
          BsonObj key = s_->pattern_.ExtractKey(d);
          keys += 1;
          bytes += d.size();
          return sorter_.Add(std::move(key), std::move(d));
        };
        for (; !held_.empty(); held_.pop_front()) HG_RETURN_IF_ERROR(add(held_.front()));
        while (true) {
          HG_ASSIGN_OR_RETURN(OptDoc d, in_->Next());
          if (!d) break;
          HG_RETURN_IF_ERROR(add(std::move(*d)));
        }
        HG_RETURN_IF_ERROR(sorter_.Finish());
        SpillMetrics& m = GlobalSpillMetrics();
        m.sort_keys_sorted += keys;
        m.sort_bytes_sorted += bytes;
        m.sort_spills += sorter_.num_spills();
        return Status::OK();
      }

      // A $sort {_id: ±1} of input already in _id order (a $group's output) sorts nothing, nor
      // one on each member of a compound _id in turn ({"_id.a": ±1, "_id.b": ±1}, in one
      // direction): ascending passes the input on as it comes, descending gives it back reversed
      // (only the last `limit` documents are held). Returns false, with what it took from the input
      // in held_, when the input is not in that order, or when reversing would hold more than the
      // sort's memory limit (the sorter then spills as usual).
      StatusWith<bool> TakeOrderedInput() {
        bool ascending = false;
        const bool by_id = s_->pattern_.IsSingleKey("_id", &ascending);
        if (!by_id && !s_->pattern_.AllKeysUnder("_id.")) return false;
        HG_ASSIGN_OR_RETURN(OptDoc first, in_->Next());
        if (!first) {
          ordered_ = true;
          return true;
        }
        held_.push_back(std::move(*first));
        if (!in_->InIdOrder()) return false;
        if (!by_id && !s_->pattern_.IsKeys("_id.", in_->IdMembers(), &ascending)) return false;
        if (ascending) {
          ordered_ = true;
          return true;
        }
        int64_t bytes = held_.back().size();
        while (true) {
          HG_ASSIGN_OR_RETURN(OptDoc d, in_->Next());
          if (!d) break;
          bytes += d->size();
          held_.push_back(std::move(*d));
          if (s_->limit_ > 0 && static_cast<int64_t>(held_.size()) > s_->limit_) {
            bytes -= held_.front().size();
            held_.pop_front();
          }
          if (bytes > s_->ctx_.limits.sort) return false;
        }
        std::reverse(held_.begin(), held_.end());
        ordered_ = reversed_ = true;
        return true;
      }

      StatusWith<OptDoc> NextOrdered() {
        if (s_->limit_ > 0 && returned_ >= s_->limit_) return OptDoc();
        ++returned_;
        if (!held_.empty()) {
          BsonObj d = std::move(held_.front());
          held_.pop_front();
          return OptDoc(std::move(d));
        }
        if (reversed_) return OptDoc();  // all of it was in held_
        return in_->Next();
      }

      static ExternalSorter MakeSorter(const SortStage& s) {
        auto o = ExternalSorterOptions::ForStage(
            s.ctx_, s.ctx_.limits.sort,
            "Sort exceeded memory limit of " + std::to_string(s.ctx_.limits.sort) +
                " bytes, but did not opt in to external sorting.");
        o.limit = s.limit_;
        const query::SortPattern* pattern = &s.pattern_;
        return ExternalSorter(
            [pattern](const BsonObj& a, const BsonObj& b) { return pattern->CompareKeys(a, b); },
            std::move(o));
      }
      std::shared_ptr<const SortStage> s_;
      std::unique_ptr<DocumentStream> in_;
      ExternalSorter sorter_;
      bool loaded_ = false;
      bool ordered_ = false;      // the input needs no sorting (TakeOrderedInput)
      bool reversed_ = false;     // ... and held_ holds it reversed
      std::deque<BsonObj> held_;  // taken from the input, not yet sorted or returned
      int64_t returned_ = 0;      // when ordered_
    };
    return std::make_unique<Stream>(Self(this), std::move(input));
  }

 private:
  query::SortPattern pattern_;
  PipelineContext ctx_;
  int64_t limit_;
};

// ---- $unwind ----

class UnwindStage : public Stage {
 public:
  std::vector<std::string> path;
  std::vector<std::string> index_path;  // empty: no includeArrayIndex
  bool preserve = false;

  std::string_view name() const override { return "$unwind"; }

  // Value at `path` following sub-documents only (no array traversal), as $unwind does.
  BsonElement Lookup(const BsonObj& doc) const {
    BsonObj cur = doc;
    for (size_t i = 0; i < path.size(); ++i) {
      BsonElement e = cur.GetField(path[i]);
      if (i + 1 == path.size()) return e;
      if (e.type() != BsonType::kObject) return BsonElement();
      cur = e.Obj();
    }
    return BsonElement();
  }

  std::unique_ptr<DocumentStream> Bind(std::unique_ptr<DocumentStream> input) const override {
    class Stream : public DocumentStream {
     public:
      Stream(std::shared_ptr<const UnwindStage> s, std::unique_ptr<DocumentStream> in)
          : s_(std::move(s)), in_(std::move(in)) {}
      StatusWith<OptDoc> Next() override {
        while (true) {
          if (pos_ < items_.size()) {
            BsonObj out = SetPathValue(doc_, s_->path, items_[pos_]);
            if (!s_->index_path.empty()) {
              out = SetPathValue(out, s_->index_path, Value::Long(static_cast<int64_t>(pos_)));
            }
            ++pos_;
            return OptDoc(std::move(out));
          }
          HG_ASSIGN_OR_RETURN(OptDoc d, in_->Next());
          if (!d) return d;
          doc_ = std::move(*d);
          items_.clear();
          pos_ = 0;
          BsonElement e = s_->Lookup(doc_);
          if (e.type() == BsonType::kArray && !e.Obj().IsEmpty()) {
            for (const auto& m : e.Obj()) items_.push_back(Value::FromElement(m));
            continue;
          }
          const bool nullish = e.eoo() || e.type() == BsonType::kNull ||
                               e.type() == BsonType::kUndefined || e.type() == BsonType::kArray;
          if (nullish) {
            if (!s_->preserve) continue;
            if (!s_->index_path.empty()) {
              return OptDoc(SetPathValue(doc_, s_->index_path, Value::Null()));
            }
            return OptDoc(doc_);
          }
          // A non-array value unwinds to itself, with a null index.
          if (!s_->index_path.empty()) {
            return OptDoc(SetPathValue(doc_, s_->index_path, Value::Null()));
          }
          return OptDoc(doc_);
        }
      }

     private:
      std::shared_ptr<const UnwindStage> s_;
      std::unique_ptr<DocumentStream> in_;
      BsonObj doc_;
      std::vector<Value> items_;
      size_t pos_ = 0;
    };
    return std::make_unique<Stream>(Self(this), std::move(input));
  }
};

// ---- $replaceRoot / $replaceWith ----

class ReplaceRootStage : public Stage {
 public:
  ReplaceRootStage(ExpressionPtr e, int64_t now) : expr_(std::move(e)), now_(now) {}
  std::string_view name() const override { return "$replaceRoot"; }
  StatusWith<BsonObj> Apply(const BsonObj& doc) const {
    Variables vars(now_);
    HG_ASSIGN_OR_RETURN(Value v, expr_->Evaluate(doc, vars));
    if (!v.IsObject()) {
      return PipelineError(40228,
                           "'newRoot' expression must evaluate to an object, but resulting "
                           "value was: " +
                               v.ToString() + ". Type of resulting value: '" +
                               std::string(bson::TypeName(v.type())) +
                               "'. Input document: " + doc.ToJson());
    }
    return v.Obj().Owned();
  }
  std::unique_ptr<DocumentStream> Bind(std::unique_ptr<DocumentStream> input) const override;

 private:
  ExpressionPtr expr_;
  int64_t now_;
};

std::unique_ptr<DocumentStream> ReplaceRootStage::Bind(
    std::unique_ptr<DocumentStream> input) const {
  return std::make_unique<MapStream<ReplaceRootStage>>(Self(this), std::move(input));
}

// ---- $sample ----

class SampleStage : public Stage {
 public:
  explicit SampleStage(int64_t size) : size_(size) {}
  std::string_view name() const override { return "$sample"; }
  std::unique_ptr<DocumentStream> Bind(std::unique_ptr<DocumentStream> input) const override {
    class Stream : public DocumentStream {
     public:
      Stream(int64_t size, std::unique_ptr<DocumentStream> in) : size_(size), in_(std::move(in)) {}
      StatusWith<OptDoc> Next() override {
        if (!loaded_) {
          loaded_ = true;
          // Reservoir sampling: a uniform sample of size_ without holding the whole input.
          std::mt19937_64 rng(std::random_device{}());
          int64_t seen = 0;
          while (true) {
            HG_ASSIGN_OR_RETURN(OptDoc d, in_->Next());
            if (!d) break;
            ++seen;
            if (static_cast<int64_t>(docs_.size()) < size_) {
              docs_.push_back(std::move(*d));
            } else {
              std::uniform_int_distribution<int64_t> pick(0, seen - 1);
              int64_t j = pick(rng);
              if (j < size_) docs_[j] = std::move(*d);
            }
          }
          std::shuffle(docs_.begin(), docs_.end(), rng);
        }
        if (pos_ >= docs_.size()) return OptDoc();
        return OptDoc(std::move(docs_[pos_++]));
      }

     private:
      int64_t size_;
      std::unique_ptr<DocumentStream> in_;
      std::vector<BsonObj> docs_;
      size_t pos_ = 0;
      bool loaded_ = false;
    };
    return std::make_unique<Stream>(size_, std::move(input));
  }

 private:
  int64_t size_;
};

// ---- $documents ----

// The documents of a $documents expression (5858203/5858204 when it is not an array of objects).
StatusWith<std::vector<BsonObj>> DocumentsOf(const Expression& e, int64_t now_millis) {
  Variables vars(now_millis);
  HG_ASSIGN_OR_RETURN(Value v, e.Evaluate(BsonObj(), vars));
  if (!v.IsArray()) {
    return PipelineError(5858203, "an array is expected for $documents, found " +
                                      std::string(bson::TypeName(v.type())));
  }
  std::vector<BsonObj> docs;
  for (const auto& m : v.ArrayValues()) {
    if (!m.IsObject()) {
      return PipelineError(5858204, "$documents expects an array of objects, found " +
                                        std::string(bson::TypeName(m.type())));
    }
    docs.push_back(m.Obj().Owned());
  }
  return docs;
}

// The expression is evaluated when the stage runs: inside a $lookup it may read the stage's
// `let` variables, whose values change with each input document.
class DocumentsStage : public Stage {
 public:
  DocumentsStage(ExpressionPtr e, int64_t now_millis) : e_(std::move(e)), now_millis_(now_millis) {}
  std::string_view name() const override { return "$documents"; }
  std::unique_ptr<DocumentStream> Bind(std::unique_ptr<DocumentStream>) const override {
    class Stream : public DocumentStream {
     public:
      explicit Stream(std::shared_ptr<const DocumentsStage> s) : s_(std::move(s)) {}
      StatusWith<OptDoc> Next() override {
        if (!docs_) {
          HG_ASSIGN_OR_RETURN(auto docs, DocumentsOf(*s_->e_, s_->now_millis_));
          docs_ = std::make_unique<VectorDocumentStream>(std::move(docs));
        }
        return docs_->Next();
      }

     private:
      std::shared_ptr<const DocumentsStage> s_;
      std::unique_ptr<VectorDocumentStream> docs_;
    };
    return std::make_unique<Stream>(Self(this));
  }

 private:
  ExpressionPtr e_;
  int64_t now_millis_;
};

// ---- $facet ----

class FacetStage : public Stage {
 public:
  std::vector<std::pair<std::string, std::unique_ptr<Pipeline>>> facets;
  std::string_view name() const override { return "$facet"; }
  std::unique_ptr<DocumentStream> Bind(std::unique_ptr<DocumentStream> input) const override {
    class Stream : public DocumentStream {
     public:
      Stream(std::shared_ptr<const FacetStage> s, std::unique_ptr<DocumentStream> in)
          : s_(std::move(s)), in_(std::move(in)) {}
      StatusWith<OptDoc> Next() override {
        if (done_) return OptDoc();
        done_ = true;
        HG_ASSIGN_OR_RETURN(auto docs, DrainStream(*in_));
        bson::BsonBuilder b;
        for (const auto& [name, pipe] : s_->facets) {
          HG_ASSIGN_OR_RETURN(auto out, pipe->RunOver(docs));
          size_t t = b.OpenArray(name);
          for (size_t i = 0; i < out.size(); ++i) b.AppendObject(std::to_string(i), out[i]);
          b.Close(t);
        }
        if (b.Length() > 16 * 1024 * 1024 + 16 * 1024) {
          return Status(ErrorCode::kBSONObjectTooLarge,
                        "document constructed by $facet is " + std::to_string(b.Length()) +
                            " bytes, which exceeds the limit of 16793600 bytes");
        }
        return OptDoc(b.Obj());
      }

     private:
      std::shared_ptr<const FacetStage> s_;
      std::unique_ptr<DocumentStream> in_;
      bool done_ = false;
    };
    return std::make_unique<Stream>(Self(this), std::move(input));
  }
};

}  // namespace

std::optional<Pipeline::LeadingMatch> PushableMatch(const Stage& stage) {
  if (stage.name() != "$match") return std::nullopt;
  return static_cast<const MatchStage&>(stage).pushable();
}

Status ParseMatchStage(const BsonElement& spec, const PipelineContext& ctx, StageList* out) {
  if (spec.type() != BsonType::kObject) {
    return PipelineError(15959, "the match filter must be an expression in an object");
  }
  BsonObj filter = spec.Obj().Owned();
  // $expr anywhere in the filter is evaluated by the query layer through the hook this module
  // installs (query_hooks.cc); calling it here also links it into every program using $match.
  InstallQueryHooks();
  HG_ASSIGN_OR_RETURN(auto matcher,
                      query::Matcher::Parse(
                          filter, query::ExpressionContext{ctx.now_millis, ctx.let, ctx.collator}));
  out->push_back(std::make_shared<MatchStage>(filter, std::move(matcher)));
  return Status::OK();
}

Status ParseLimitStage(const BsonElement& spec, const PipelineContext&, StageList* out) {
  HG_ASSIGN_OR_RETURN(int64_t n,
                      ParseWholeNumber(spec, 15957, "the limit must be specified as a number"));
  if (n <= 0) return PipelineError(15958, "the limit must be positive");
  out->push_back(MakeLimitSkipStage(true, n));
  return Status::OK();
}

Status ParseSkipStage(const BsonElement& spec, const PipelineContext&, StageList* out) {
  HG_ASSIGN_OR_RETURN(int64_t n,
                      ParseWholeNumber(spec, 15972, "Argument to $skip must be a number"));
  if (n < 0) return PipelineError(15956, "Argument to $skip cannot be negative");
  out->push_back(MakeLimitSkipStage(false, n));
  return Status::OK();
}

Status ParseCountStage(const BsonElement& spec, const PipelineContext&, StageList* out) {
  if (spec.type() != BsonType::kString) {
    return PipelineError(40156, "the count field must be a non-empty string");
  }
  std::string_view f = spec.Str();
  if (f.empty()) return PipelineError(40157, "the count field must be a non-empty string");
  if (f[0] == '$') return PipelineError(40158, "the count field cannot be a $-prefixed path");
  if (f.find('.') != std::string_view::npos) {
    return PipelineError(40160, "the count field cannot contain '.'");
  }
  out->push_back(std::make_shared<CountStage>(std::string(f)));
  return Status::OK();
}

Status ParseSortStage(const BsonElement& spec, const PipelineContext& ctx, StageList* out) {
  if (spec.type() != BsonType::kObject) {
    return PipelineError(15973, "the $sort key specification must be an object");
  }
  if (spec.Obj().IsEmpty()) {
    return PipelineError(15976, "$sort stage must have at least one sort key");
  }
  HG_ASSIGN_OR_RETURN(auto pattern, query::SortPattern::Parse(spec.Obj().Owned()));
  out->push_back(MakeSortStage(std::move(pattern), ctx));
  return Status::OK();
}

StagePtr MakeSortStage(query::SortPattern pattern, const PipelineContext& ctx) {
  if (ctx.collator) pattern.SetCollator(ctx.collator);
  return std::make_shared<SortStage>(std::move(pattern), ctx);
}

StagePtr MakeLimitSkipStage(bool is_limit, int64_t n) {
  return std::make_shared<LimitSkipStage>(is_limit, n);
}

void CoalesceSortLimit(StageList* stages) {
  for (size_t i = 0; i < stages->size(); ++i) {
    const auto* sort = dynamic_cast<const SortStage*>((*stages)[i].get());
    if (sort == nullptr) continue;
    // The documents the following $skip/$limit run can let through: skips add to the offset,
    // and a limit caps it at offset + n.
    int64_t offset = 0, bound = 0;
    for (size_t j = i + 1; j < stages->size(); ++j) {
      const auto* ls = dynamic_cast<const LimitSkipStage*>((*stages)[j].get());
      if (ls == nullptr) break;
      if (!ls->is_limit()) {
        if (__builtin_add_overflow(offset, ls->n(), &offset)) break;
        continue;
      }
      int64_t b;
      if (__builtin_add_overflow(offset, ls->n(), &b)) break;
      bound = bound == 0 ? b : std::min(bound, b);
    }
    if (bound > 0 && (sort->limit() == 0 || bound < sort->limit())) {
      (*stages)[i] = std::make_shared<SortStage>(sort->pattern(), sort->ctx(), bound);
    }
  }
}

Status ParseUnwindStage(const BsonElement& spec, const PipelineContext&, StageList* out) {
  auto u = std::make_shared<UnwindStage>();
  std::string path;
  if (spec.type() == BsonType::kString) {
    path = std::string(spec.Str());
  } else if (spec.type() == BsonType::kObject) {
    for (const auto& f : spec.Obj()) {
      if (f.FieldName() == "path") {
        if (f.type() != BsonType::kString) {
          return PipelineError(28808, "expected a string as the path for $unwind stage, got " +
                                          std::string(bson::TypeName(f.type())));
        }
        path = std::string(f.Str());
      } else if (f.FieldName() == "includeArrayIndex") {
        if (f.type() != BsonType::kString) {
          return PipelineError(28810,
                               "expected a non-empty string for the includeArrayIndex "
                               "option to $unwind stage");
        }
        std::string_view idx = f.Str();
        if (idx.empty()) {
          return PipelineError(28810,
                               "expected a non-empty string for the includeArrayIndex "
                               "option to $unwind stage");
        }
        if (idx[0] == '$') {
          return PipelineError(28822,
                               "includeArrayIndex option to $unwind stage should not be "
                               "prefixed with a '$': " +
                                   std::string(idx));
        }
        u->index_path = query::SplitPath(idx);
      } else if (f.FieldName() == "preserveNullAndEmptyArrays") {
        if (f.type() != BsonType::kBool) {
          return PipelineError(28809,
                               "expected a boolean for the preserveNullAndEmptyArrays "
                               "option to $unwind stage");
        }
        u->preserve = f.Bool();
      } else {
        return PipelineError(28811,
                             "unrecognized option to $unwind stage: " + std::string(f.FieldName()));
      }
    }
    if (path.empty()) return PipelineError(28812, "no path specified to $unwind stage");
  } else {
    return PipelineError(15981,
                         "expected either a string or an object as specification for "
                         "$unwind stage, got " +
                             std::string(bson::TypeName(spec.type())));
  }
  if (path.empty() || path[0] != '$') {
    return PipelineError(28818,
                         "path option to $unwind stage should be prefixed with a '$': " + path);
  }
  u->path = query::SplitPath(std::string_view(path).substr(1));
  for (const auto& p : u->path) {
    if (p.empty() || p[0] == '$') {
      return PipelineError(15998,
                           "FieldPath field names may not be empty strings or start with "
                           "'$'.");
    }
  }
  out->push_back(std::move(u));
  return Status::OK();
}

Status ParseReplaceRootStage(const BsonElement& spec, const PipelineContext& ctx, StageList* out) {
  BsonElement expr_elem = spec;
  if (spec.FieldName() == "$replaceRoot") {
    if (spec.type() != BsonType::kObject) {
      return PipelineError(40229,
                           "expected an object as specification for $replaceRoot stage, "
                           "got " +
                               std::string(bson::TypeName(spec.type())));
    }
    expr_elem = BsonElement();
    for (const auto& f : spec.Obj()) {
      if (f.FieldName() != "newRoot") {
        return bson::UnknownField("$replaceRoot", f.FieldName());
      }
      expr_elem = f;
    }
    if (expr_elem.eoo()) {
      return PipelineError(40231, "no newRoot specified for the $replaceRoot stage");
    }
  }
  HG_ASSIGN_OR_RETURN(auto e, Expression::ParseExpression(expr_elem, ctx.Expressions()));
  out->push_back(std::make_shared<ReplaceRootStage>(std::move(e), ctx.now_millis));
  return Status::OK();
}

Status ParseSampleStage(const BsonElement& spec, const PipelineContext&, StageList* out) {
  if (spec.type() != BsonType::kObject) {
    return PipelineError(28745, "the $sample stage specification must be an object");
  }
  bool have_size = false;
  int64_t size = 0;
  for (const auto& f : spec.Obj()) {
    if (f.FieldName() != "size") {
      return PipelineError(28748, "unrecognized option to $sample: " + std::string(f.FieldName()));
    }
    if (!f.IsNumber()) return PipelineError(28746, "size argument to $sample must be a number");
    size = f.NumberLong();
    if (size < 0) return PipelineError(28747, "size argument to $sample must not be negative");
    have_size = true;
  }
  if (!have_size) return PipelineError(28749, "$sample stage must specify a size");
  out->push_back(std::make_shared<SampleStage>(size));
  return Status::OK();
}

Status ParseDocumentsStage(const BsonElement& spec, const PipelineContext& ctx, StageList* out) {
  HG_ASSIGN_OR_RETURN(auto e, Expression::ParseExpression(spec, ctx.Expressions()));
  if (e->ConstantValue() != nullptr) {
    // A literal array: its errors are parse errors.
    HG_RETURN_IF_ERROR(DocumentsOf(*e, ctx.now_millis).status());
  }
  out->push_back(std::make_shared<DocumentsStage>(std::move(e), ctx.now_millis));
  return Status::OK();
}

Status ParseFacetStage(const BsonElement& spec, const PipelineContext& ctx, StageList* out) {
  if (spec.type() != BsonType::kObject || spec.Obj().IsEmpty()) {
    return PipelineError(40169, "the $facet specification must be a non-empty object, but found: " +
                                    StageSpecJson(spec));
  }
  auto facet = std::make_shared<FacetStage>();
  for (const auto& f : spec.Obj()) {
    if (f.type() != BsonType::kArray) {
      return PipelineError(40170, "arguments to $facet must be arrays, " +
                                      std::string(f.FieldName()) + " is type " +
                                      std::string(bson::TypeName(f.type())));
    }
    for (const auto& st : f.Obj()) {
      if (st.type() == BsonType::kObject && !st.Obj().IsEmpty()) {
        std::string_view n = st.Obj().FirstElement().FieldName();
        if (n == "$facet" || n == "$out" || n == "$merge" || n == "$documents" ||
            n == "$collStats" || n == "$indexStats" || n == "$geoNear") {
          return PipelineError(40600,
                               std::string(n) + " is not allowed to be used within a $facet stage");
        }
      }
    }
    HG_ASSIGN_OR_RETURN(auto sub, Pipeline::Parse(f.Obj(), ctx));
    facet->facets.emplace_back(std::string(f.FieldName()), std::move(sub));
  }
  out->push_back(std::move(facet));
  return Status::OK();
}

}  // namespace hourglass::pipeline
