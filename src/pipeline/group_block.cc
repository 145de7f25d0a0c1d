#include "pipeline/group_block.h"

#include <algorithm>
#include <array>
#include <map>
#include <set>

#include "pipeline/block_read_ahead.h"
#include "pipeline/dependencies.h"

namespace hourglass::pipeline {

using bson::BsonBuilder;
using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;

namespace {

// Whether `e` holds a variable reference ("$$..."): such inputs are left to the document path,
// which evaluates them with the stage's variables.
bool ReadsVariables(const BsonElement& e) {
  if (e.type() == BsonType::kString) return e.Str().starts_with("$$");
  if (e.type() != BsonType::kObject && e.type() != BsonType::kArray) return false;
  for (const BsonElement& x : e.Obj()) {
    if (ReadsVariables(x)) return true;
  }
  return false;
}

// What the walk of an _id spec found.
struct KeyRefs {
  bool eligible = true;
  std::vector<std::string> fields;        // top-level fields referenced, in first-seen order
  std::map<std::string, int> plain_refs;  // references other than "$f" as $dateTrunc's date
  // field -> its {"": {$dateTrunc: ...}} specs, each with its fixed bin width (0: calendar)
  std::map<std::string, std::vector<std::pair<BsonObj, int64_t>>> truncs;
  // field -> the bins of the date parts that read it as their date ($hour: "$f"...)
  std::map<std::string, std::vector<DatePartBins>> parts;

  void Add(const std::string& field, bool as_trunc_date) {
    if (std::find(fields.begin(), fields.end(), field) == fields.end()) fields.push_back(field);
    if (!as_trunc_date) ++plain_refs[field];
  }
};

// Records the top-level field of a reference "$a.b" ("a"); other strings are not references.
// "$$ROOT"/"$$CURRENT" make the key read the whole document: not eligible.
void WalkString(std::string_view s, KeyRefs* refs, bool as_trunc_date) {
  if (s.size() < 2 || s[0] != '$') return;
  if (s[1] == '$') {
    std::string_view var = s.substr(2);
    var = var.substr(0, var.find('.'));
    if (var == "ROOT" || var == "CURRENT") refs->eligible = false;
    return;
  }
  std::string_view path = s.substr(1);
  size_t dot = path.find('.');
  refs->Add(std::string(path.substr(0, dot)), as_trunc_date && dot == std::string_view::npos);
}

void WalkKey(const BsonElement& e, KeyRefs* refs) {
  if (e.type() == BsonType::kString) {
    WalkString(e.Str(), refs, false);
    return;
  }
  if (e.type() != BsonType::kObject && e.type() != BsonType::kArray) return;
  BsonObj obj = e.Obj();
  if (e.type() == BsonType::kObject && obj.NumFields() == 1 &&
      obj.FirstElement().FieldName() == "$dateTrunc" &&
      obj.FirstElement().type() == BsonType::kObject) {
    BsonElement date = obj.FirstElement().Obj()["date"];
    for (const BsonElement& arg : obj.FirstElement().Obj()) {
      if (arg.FieldName() == "date" && arg.type() == BsonType::kString) {
        WalkString(arg.Str(), refs, true);
      } else {
        WalkKey(arg, refs);
      }
    }
    if (const std::optional<std::string_view> field = TopLevelFieldReference(date)) {
      BsonBuilder holder;
      holder.AppendObject("", obj);
      const DateTruncBins bins = DateTruncBinsOf(obj.FirstElement().Obj());
      refs->truncs[std::string(*field)].emplace_back(holder.Obj(), bins.fixed ? bins.min_width : 0);
    }
    return;
  }
  if (e.type() == BsonType::kObject && obj.NumFields() == 1) {
    if (std::optional<DatePartBins> bins = DatePartBinsOf(obj)) {
      // The date is read only for its bin; the other arguments (a time zone, a format, an
      // onNull expression) are walked as usual.
      refs->Add(bins->field, true);
      const BsonElement op = obj.FirstElement();
      if (op.type() == BsonType::kObject) {
        for (const BsonElement& arg : op.Obj()) {
          if (arg.FieldName() != "date") WalkKey(arg, refs);
        }
      }
      refs->parts[bins->field].push_back(std::move(*bins));
      return;
    }
  }
  if (e.type() == BsonType::kObject && obj.NumFields() == 1 &&
      (obj.FirstElement().FieldName() == "$literal" ||
       obj.FirstElement().FieldName() == "$const")) {
    return;
  }
  for (const BsonElement& child : obj) WalkKey(child, refs);
}

}  // namespace

std::optional<GroupBlockPlan> GroupBlockPlan::Make(const BsonElement& id,
                                                   const std::vector<BsonElement>& accumulators) {
  GroupBlockPlan plan;
  KeyRefs refs;
  WalkKey(id, &refs);
  // A key of random numbers differs between rows of equal fields: left to the document path,
  // since block processing evaluates a key once for rows whose fields are equal.
  if (!refs.eligible || ExpressionDependencies(id).random) return std::nullopt;
  plan.key_fields_ = refs.fields;
  std::set<std::string> binned;
  for (const auto& [field, specs] : refs.truncs) binned.insert(field);
  for (const auto& [field, bins] : refs.parts) binned.insert(field);
  for (const std::string& field : binned) {
    if (refs.plain_refs.count(field) != 0) continue;  // also read otherwise: no bins
    TruncOnly t{field, {}, {}, {}};
    const auto& specs = refs.truncs[field];
    for (const auto& [spec, width] : specs) {
      auto parsed = Expression::ParseExpression(spec.FirstElement(), ParseContext());
      if (!parsed.ok()) break;  // e.g. it reads $let variables: no shortcut for this field
      t.truncs.push_back(std::shared_ptr<Expression>(std::move(parsed).value()));
      t.widths.push_back(width);
    }
    t.parts = refs.parts[field];
    if (t.truncs.size() == specs.size()) plan.trunc_only_.push_back(std::move(t));
  }
  for (const BsonElement& acc : accumulators) {
    if (acc.type() != BsonType::kObject || acc.Obj().NumFields() != 1) return std::nullopt;
    BsonElement op = acc.Obj().FirstElement();
    if (op.FieldName() == "$percentile" || op.FieldName() == "$median") {
      // Options besides the input (p, method) were checked when the stage parsed them.
      if (op.type() != BsonType::kObject) return std::nullopt;
      op = op.Obj()["input"];
      if (op.eoo()) return std::nullopt;
    } else if (!IsAccumulatorName(op.FieldName())) {
      return std::nullopt;  // $topN & co.: options
    }
    AccInput in;
    if (op.FieldName() == "$count") {
      in.constant = Value::Int(1);
    } else if (const std::optional<std::string_view> field = TopLevelFieldReference(op)) {
      in.field = std::string(*field);
    } else if (op.type() == BsonType::kObject || op.type() == BsonType::kArray ||
               op.type() == BsonType::kString) {
      // A constant, or an expression of top-level fields evaluated on just those cells.
      auto parsed = Expression::ParseExpression(op, ParseContext());
      if (!parsed.ok()) return std::nullopt;
      if (const Value* c = parsed.value()->ConstantValue()) {
        in.constant = *c;
      } else {
        const FieldDependencies deps = ExpressionDependencies(op);
        if (ReadsVariables(op) || deps.needs_whole_document) return std::nullopt;
        in.expr = std::shared_ptr<Expression>(std::move(parsed).value());
        in.reads.assign(deps.fields.begin(), deps.fields.end());
        plan.has_expressions_ = true;
        if (auto arith = ColumnArith::Compile(op)) {
          in.arith = std::make_shared<const ColumnArith>(std::move(*arith));
        } else {
          plan.all_arith_ = false;
        }
      }
    } else {
      in.constant = Value::FromElement(op);
    }
    plan.inputs_.push_back(std::move(in));
  }
  return plan;
}

std::optional<GroupBlockPlan> GroupBlockPlan::MakeBucket(
    const BsonElement& group_by, const std::vector<Value>& boundaries, const Value& default_key,
    const Status& no_bin, const std::vector<BsonElement>& accumulators) {
  std::optional<GroupBlockPlan> plan = Make(group_by, accumulators);
  if (!plan) return plan;
  Bins bins;
  bins.boundaries = boundaries;
  bins.default_key = default_key;
  bins.no_bin = no_bin;
  if (const std::optional<std::string_view> field = TopLevelFieldReference(group_by)) {
    bins.field = std::string(*field);
  } else if (std::optional<ColumnArith> arith = ColumnArith::Compile(group_by)) {
    bins.arith = std::make_shared<const ColumnArith>(std::move(*arith));
  } else {
    return plan;
  }
  for (const Value& b : boundaries) {
    const BsonType t = b.type();
    const bool exact = (t == BsonType::kDouble && !std::isnan(b.NumberDouble())) ||
                       t == BsonType::kInt32 ||
                       (t == BsonType::kInt64 && ExactAsDouble(b.NumberLong()));
    if (!exact) return plan;
    bins.bounds.push_back(b.NumberDouble());
  }
  plan->bins_ = std::move(bins);
  return plan;
}

std::vector<std::string> GroupBlockPlan::RequiredFields() const {
  std::vector<std::string> out = key_fields_;
  auto need = [&](const std::string& f) {
    if (std::find(out.begin(), out.end(), f) == out.end()) out.push_back(f);
  };
  for (const AccInput& in : inputs_) {
    if (in.field) need(*in.field);
    for (const std::string& f : in.reads) need(f);
  }
  return out;
}

namespace {

// The bin of each of rows[0..n) in `numbers` (a column of doubles, int32s, or int64s a double
// holds) by the ascending `bounds`: i for [bounds[i], bounds[i + 1]), and bounds.size() - 1 for
// the rest (NaN, which orders below every number, and missing cells). False when the column is
// not such numbers.
bool BinRows(const NumberColumn& numbers, const std::vector<uint32_t>& rows, size_t n,
             const std::vector<double>& bounds, std::vector<uint32_t>* bin_of) {
  const BsonType type = numbers.type;
  if (type != BsonType::kDouble && type != BsonType::kInt32 && type != BsonType::kInt64) {
    return false;
  }
  const auto outside = static_cast<uint32_t>(bounds.size() - 1);
  bin_of->resize(n);
  for (size_t i = 0; i < n; ++i) {
    const uint32_t r = rows[i];
    uint32_t k = outside;
    if (numbers.Present(r)) {
      double x = 0;
      if (type == BsonType::kDouble) {
        x = numbers.Double(r);
      } else if (type == BsonType::kInt32) {
        x = static_cast<double>(static_cast<int32_t>(numbers.Int(r)));
      } else {
        const int64_t v = numbers.Int(r);
        if (!ExactAsDouble(v)) return false;
        x = static_cast<double>(v);
      }
      // NaN fails both comparisons.
      if (x >= bounds.front() && x < bounds.back()) {
        k = static_cast<uint32_t>(std::upper_bound(bounds.begin(), bounds.end(), x) -
                                  bounds.begin() - 1);
      }
    }
    (*bin_of)[i] = k;
  }
  return true;
}

// Folds rows run[0..n) of `block` row by row, every accumulator in turn, as the document path
// does (so that an expression's error surfaces at the same row), evaluating each expression on
// a document of the cells it reads.
Status FoldRows(const ColumnBlock& block, const std::vector<GroupBlockPlan::AccInput>& inputs,
                std::vector<std::unique_ptr<Accumulator>>& accs, const uint32_t* run, size_t n,
                const GroupBlockPlan::Sink& sink) {
  Variables vars(0);  // inputs that read variables are not folded here
  CellScratch scratch;
  auto cell = [&](const std::string& name, uint32_t r) {
    const ColumnBlock::Field* f = block.Find(name);
    if (f == nullptr) return BsonElement();
    return f->constant ? f->value : f->Cell(r, scratch);
  };
  int64_t before = 0;
  for (const auto& acc : accs) before += acc->ApproxBytes();
  for (size_t i = 0; i < n; ++i) {
    const uint32_t r = run[i];
    for (size_t j = 0; j < inputs.size(); ++j) {
      const GroupBlockPlan::AccInput& in = inputs[j];
      if (in.field) {
        HG_RETURN_IF_ERROR(accs[j]->ProcessElement(cell(*in.field, r)));
      } else if (in.expr) {
        BsonBuilder doc;
        for (const std::string& f : in.reads) {
          const BsonElement e = cell(f, r);
          if (!e.eoo()) doc.AppendElementAs(e, f);
        }
        HG_ASSIGN_OR_RETURN(Value v, in.expr->Evaluate(doc.Obj(), vars));
        HG_RETURN_IF_ERROR(accs[j]->Process(v));
      } else {
        HG_RETURN_IF_ERROR(accs[j]->Process(in.constant));
      }
    }
  }
  int64_t after = 0;
  for (const auto& acc : accs) after += acc->ApproxBytes();
  return sink.account(after - before).status();
}

// Adds rows run[0..n) of the columns values[0..K) to the double-doubles sums[0..K), row by row
// across them (K known here, so that the sums can live in registers).
// Two lanes' sums advance in one instruction stream, as pairs of doubles (SSE2, which every
// x86-64 has; elsewhere the compiler splits them).
template <size_t K>
void FoldLanes(DoubleDoubleSum* const* sums, const double* const* values, const uint32_t* run,
               size_t n) {
  using Pair = double __attribute__((vector_size(16)));
  constexpr size_t kPairs = K / 2;
  Pair sum[kPairs + 1], addend[kPairs + 1], special[kPairs + 1];  // + 1: no zero-size array
  for (size_t p = 0; p < kPairs; ++p) {
    double a[3], b[3];
    sums[2 * p]->Parts(&a[0], &a[1], &a[2]);
    sums[2 * p + 1]->Parts(&b[0], &b[1], &b[2]);
    sum[p] = Pair{a[0], b[0]};
    addend[p] = Pair{a[1], b[1]};
    special[p] = Pair{a[2], b[2]};
  }
  DoubleDoubleSum odd = K % 2 == 1 ? *sums[K - 1] : DoubleDoubleSum();
  for (size_t i = 0; i < n; ++i) {
    const uint32_t r = run[i];
    for (size_t p = 0; p < kPairs; ++p) {
      DoubleDoubleSum::Step(sum[p], addend[p], special[p],
                            Pair{values[2 * p][r], values[2 * p + 1][r]});
    }
    if constexpr (K % 2 == 1) odd.Add(values[K - 1][r]);
  }
  for (size_t p = 0; p < kPairs; ++p) {
    sums[2 * p]->SetParts(sum[p][0], addend[p][0], special[p][0]);
    sums[2 * p + 1]->SetParts(sum[p][1], addend[p][1], special[p][1]);
  }
  if constexpr (K % 2 == 1) *sums[K - 1] = odd;
}

// FoldLanes over `lanes` columns, up to 12 at a time.
void FoldDoubleLanes(DoubleDoubleSum* const* sums, const double* const* values, size_t lanes,
                     const uint32_t* run, size_t n) {
  using Fold = void (*)(DoubleDoubleSum* const*, const double* const*, const uint32_t*, size_t);
  static constexpr Fold kFolds[] = {nullptr,      FoldLanes<1>, FoldLanes<2>,  FoldLanes<3>,
                                    FoldLanes<4>, FoldLanes<5>, FoldLanes<6>,  FoldLanes<7>,
                                    FoldLanes<8>, FoldLanes<9>, FoldLanes<10>, FoldLanes<11>,
                                    FoldLanes<12>};
  constexpr size_t kWidth = std::size(kFolds) - 1;
  for (size_t first = 0; first < lanes; first += kWidth) {
    kFolds[std::min(kWidth, lanes - first)](sums + first, values + first, run, n);
  }
}

// Runs of doubles waiting to be added to their double-doubles, so that the runs of different
// groups (a bucket's rows usually go to a group of their own) advance together, as the lanes
// of one run do. Each double-double gets its runs in their order. The values are copied (a
// block's columns last only until the next block); the double-doubles must stay put until
// Flush, so the caller flushes before anything that may spill the groups.
class StagedLanes {
 public:
  static constexpr size_t kWidth = 4;

  // Stages rows run[0..n) of `values` for `sum`. Flushes the staged runs first when there are
  // kWidth of them or one is `sum`'s, and then returns true.
  bool Stage(DoubleDoubleSum* sum, const double* values, const uint32_t* run, size_t n) {
    bool flushed = false;
    if (k_ == kWidth || std::any_of(lanes_.begin(), lanes_.begin() + k_,
                                    [&](const Lane& l) { return l.sum == sum; })) {
      Flush();
      flushed = true;
    }
    Lane& lane = lanes_[k_++];
    lane.sum = sum;
    lane.values.resize(n);
    for (size_t i = 0; i < n; ++i) lane.values[i] = values[run[i]];
    return flushed;
  }
  bool full() const { return k_ == kWidth; }

  void Flush() {
    if (k_ == 0) return;
    size_t common = lanes_[0].values.size();
    for (size_t l = 1; l < k_; ++l) common = std::min(common, lanes_[l].values.size());
    DoubleDoubleSum* sums[kWidth];
    const double* values[kWidth];
    for (size_t l = 0; l < k_; ++l) {
      sums[l] = lanes_[l].sum;
      values[l] = lanes_[l].values.data();
    }
    if (identity_.size() < common) {
      for (size_t i = identity_.size(); i < common; ++i)
        identity_.push_back(static_cast<uint32_t>(i));
    }
    FoldDoubleLanes(sums, values, k_, identity_.data(), common);
    for (size_t l = 0; l < k_; ++l) {
      DoubleDoubleSum s = *sums[l];
      for (size_t i = common; i < lanes_[l].values.size(); ++i) s.Add(values[l][i]);
      *sums[l] = s;
    }
    k_ = 0;
  }

 private:
  struct Lane {
    DoubleDoubleSum* sum = nullptr;
    std::vector<double> values;
  };
  std::array<Lane, kWidth> lanes_;
  size_t k_ = 0;
  std::vector<uint32_t> identity_;  // identity_[i] == i
};

}  // namespace

Status GroupBlockPlan::Consume(BlockSource& blocks, const Sink& sink) const {
  // The next blocks are read and decoded beside the folding, when a helper thread is idle.
  BlockReadAhead source(blocks);
  source.RequireFields(RequiredFields());
  // A key field read only by $dateTrunc can do with its bounds when it is no accumulator's input.
  std::vector<std::string> boundable;
  for (const TruncOnly& t : trunc_only_) {
    if (std::none_of(inputs_.begin(), inputs_.end(),
                     [&](const AccInput& in) { return in.field == t.field; })) {
      boundable.push_back(t.field);
    }
  }
  if (!boundable.empty()) source.AcceptBounds(boundable);
  Variables vars(0);  // the $dateTrunc shortcuts read no variables
  std::vector<uint32_t> all;
  StagedLanes staged;
  std::vector<DoubleDoubleSum*> lane_sums;  // a run's inputs folded as double-doubles
  std::vector<const double*> lane_values;
  std::vector<bool> laned;
  // Expression inputs computed as column arithmetic for a run: their values by row, and the
  // columns of doubles that hold them.
  std::vector<std::vector<uint64_t>> arith_values(inputs_.size());
  std::vector<ColumnBlock::Field> arith_fields(inputs_.size());
  std::vector<const NumberColumn*> arith_columns;
  // A $bucket's rows by bin (bins_): each row's bin, the rows of each bin in order, and where
  // each bin's rows start.
  std::vector<uint64_t> bin_values;  // groupBy computed as column arithmetic
  std::vector<uint32_t> bin_of, bin_rows;
  std::vector<size_t> bin_starts, bin_at;
  while (true) {
    HG_ASSIGN_OR_RETURN(const ColumnBlock* block, source.NextBlock());
    if (block == nullptr) {
      staged.Flush();
      return sink.account(0).status();
    }
    const std::vector<uint32_t>* rows = &block->selection;
    if (block->all_rows) {
      for (size_t i = all.size(); i < static_cast<size_t>(block->num_rows); ++i) {
        all.push_back(static_cast<uint32_t>(i));  // all[i] == i: only ever extended
      }
      rows = &all;
    }
    const size_t num_rows = static_cast<size_t>(block->SelectedRows());
    if (num_rows == 0) continue;

    // The key's fields in this block, and the ones that vary from row to row.
    std::vector<const ColumnBlock::Field*> key_fields;
    std::vector<const ColumnBlock::Field*> varying;
    for (const std::string& name : key_fields_) {
      const ColumnBlock::Field* f = block->Find(name);
      key_fields.push_back(f);
      if (f != nullptr && !f->constant) varying.push_back(f);
    }
    // The key's document for `row`, or with `bound` standing for the bounded field's value.
    CellScratch scratch;
    auto key_doc = [&](uint32_t row, const BsonElement* bound = nullptr) {
      BsonBuilder b;
      for (const ColumnBlock::Field* f : key_fields) {
        if (f == nullptr) continue;
        const BsonElement v = f->constant ? f->value : f->bounded ? *bound : f->Cell(row, scratch);
        if (!v.eoo()) b.AppendElementAs(v, f->name);
      }
      return b.Obj();
    };
    const TruncOnly* t = nullptr;  // the one varying field, when it is read only by $dateTrunc
    if (varying.size() == 1) {
      for (const TruncOnly& candidate : trunc_only_) {
        if (candidate.field == varying[0]->name) t = &candidate;
      }
    }
    // Whether every $dateTrunc and date part puts the dates of the two key documents (a and b,
    // when they are dates) in the same bin.
    auto same_bins = [&](const BsonObj& a_doc, std::optional<int64_t> a, const BsonObj& b_doc,
                         std::optional<int64_t> b) {
      if (!t->parts.empty() &&
          (!a || !b ||
           !std::all_of(t->parts.begin(), t->parts.end(),
                        [&](const DatePartBins& bins) { return bins.SameBin(*a, *b); }))) {
        return false;
      }
      for (const auto& trunc : t->truncs) {
        StatusWith<Value> a = trunc->Evaluate(a_doc, vars);
        StatusWith<Value> b = trunc->Evaluate(b_doc, vars);
        // Errors: per-row evaluation reports them in row order.
        if (!a.ok() || !b.ok() || !ValuesEqual(a.value(), b.value())) return false;
      }
      return true;
    };

    // One key for the whole block?
    bool one_key = varying.empty();
    uint32_t key_row = (*rows)[0];
    const BsonElement* key_bound = nullptr;  // the key is that of this bounded value
    if (t != nullptr && varying[0]->bounded) {
      auto date_of = [](const BsonElement& e) {
        return e.type() == BsonType::kDate ? std::optional<int64_t>(e.DateMillis()) : std::nullopt;
      };
      if (same_bins(key_doc(0, &varying[0]->lo), date_of(varying[0]->lo),
                    key_doc(0, &varying[0]->hi), date_of(varying[0]->hi))) {
        one_key = true;
        key_bound = &varying[0]->lo;
      }
    }
    if (!one_key) {
      for (const ColumnBlock::Field*& f : varying) {
        if (!f->bounded) continue;
        HG_ASSIGN_OR_RETURN(const ColumnBlock::Field* decoded, source.DecodeBounded(f->name));
        std::replace(key_fields.begin(), key_fields.end(), f, decoded);
        f = decoded;
      }
    }
    bool dates = false;  // the varying field holds a date in every selected row
    // Its date in row r (when `dates`).
    const NumberColumn* date_numbers = nullptr;
    auto date_at = [&](uint32_t r) {
      return date_numbers != nullptr ? date_numbers->Int(r) : varying[0]->cells[r].DateMillis();
    };
    if (!one_key && t != nullptr) {
      const NumberColumn& numbers = varying[0]->numbers;
      if (numbers.type == BsonType::kEOO) {
        dates = std::all_of(rows->data(), rows->data() + num_rows, [&](uint32_t r) {
          return varying[0]->cells[r].type() == BsonType::kDate;
        });
      } else {
        dates = numbers.type == BsonType::kDate &&
                std::all_of(rows->data(), rows->data() + num_rows,
                            [&](uint32_t r) { return numbers.Present(r); });
        if (dates) date_numbers = &numbers;
      }
    }
    if (dates) {
      uint32_t lo = (*rows)[0], hi = (*rows)[0];
      int64_t lo_date = date_at(lo), hi_date = lo_date;
      for (size_t i = 0; i < num_rows; ++i) {
        const uint32_t r = (*rows)[i];
        const int64_t d = date_at(r);
        if (d < lo_date) {
          lo = r;
          lo_date = d;
        }
        if (d > hi_date) {
          hi = r;
          hi_date = d;
        }
      }
      if (same_bins(key_doc(lo), lo_date, key_doc(hi), hi_date)) {
        one_key = true;
        key_row = lo;
      }
    }

    // The accumulators' inputs in this block.
    struct Input {
      const ColumnBlock::Field* field = nullptr;  // column or block constant
      Value value;                                // constant (or the block constant's value)
    };
    std::vector<Input> inputs(inputs_.size());
    for (size_t j = 0; j < inputs_.size(); ++j) {
      if (!inputs_[j].field) {
        inputs[j].value = inputs_[j].constant;
        continue;
      }
      const ColumnBlock::Field* f = block->Find(*inputs_[j].field);
      if (f == nullptr) continue;  // missing in every row
      if (f->constant) {
        inputs[j].value = Value::FromElement(f->value);
      } else {
        inputs[j].field = f;
      }
    }
    // Folds the rows run[0..n) into `accs`, then accounts for the memory added: once per run (at
    // most one bucket's rows), so the table may pass its limit by that much before it spills.
    // A spill forgets `accs`; every run is followed by a fresh group lookup (or the end).
    auto fold = [&](std::vector<std::unique_ptr<Accumulator>>& accs, const uint32_t* run,
                    size_t n) -> Status {
      // Expressions are computed for the run as column arithmetic when every one is such and
      // its fields are columns of numbers here; otherwise the rows are folded one by one.
      bool by_columns = !has_expressions_ || all_arith_;
      for (size_t j = 0; j < inputs_.size() && by_columns && has_expressions_; ++j) {
        if (!inputs_[j].arith) continue;
        const ColumnArith& arith = *inputs_[j].arith;
        arith_columns.clear();
        for (const std::string& name : arith.fields()) {
          const ColumnBlock::Field* f = block->Find(name);
          arith_columns.push_back(f == nullptr || f->constant ? nullptr : &f->numbers);
        }
        arith_values[j].resize(static_cast<size_t>(block->num_rows));
        BsonType type = BsonType::kEOO;
        by_columns = arith.Evaluate(arith_columns, run, n, arith_values[j].data(), &type);
        arith_fields[j].numbers = NumberColumn{type, arith_values[j].data(), nullptr};
        inputs[j].field = &arith_fields[j];
      }
      // Double-doubles of $sum/$avg over columns of doubles without missing cells advance
      // together, row by row: each keeps its row order, and the CPU overlaps their dependency
      // chains (one alone waits on its own about four times as long as a plain sum's).
      lane_sums.clear();
      lane_values.clear();
      laned.assign(inputs.size(), false);
      for (size_t j = 0; j < inputs.size() && by_columns; ++j) {
        const ColumnBlock::Field* f = inputs[j].field;
        if (f == nullptr || f->numbers.type != BsonType::kDouble || f->numbers.present != nullptr) {
          continue;
        }
        if (DoubleDoubleSum* sum = accs[j]->DoubleLane()) {
          laned[j] = true;
          lane_sums.push_back(sum);
          lane_values.push_back(reinterpret_cast<const double*>(f->numbers.values));
        }
      }
      // When every input is such a sum and they are few, the run is staged with the runs of
      // other groups and they advance together; the groups' memory is checked when the staged
      // runs are flushed (a spill would forget the double-doubles they point to).
      if (!lane_sums.empty() && lane_sums.size() == inputs.size() &&
          lane_sums.size() < StagedLanes::kWidth) {
        bool flushed = false;
        for (size_t l = 0; l < lane_sums.size(); ++l) {
          flushed = staged.Stage(lane_sums[l], lane_values[l], run, n) || flushed;
          accs[l]->DoublesAdded(n);
        }
        if (!flushed && !staged.full()) return Status::OK();
        staged.Flush();
        return sink.account(0).status();
      }
      staged.Flush();
      if (!by_columns) return FoldRows(*block, inputs_, accs, run, n, sink);
      FoldDoubleLanes(lane_sums.data(), lane_values.data(), lane_sums.size(), run, n);
      for (size_t j = 0; j < inputs.size(); ++j) {
        if (laned[j]) accs[j]->DoublesAdded(n);
      }
      int64_t added = 0;
      for (size_t j = 0; j < inputs.size(); ++j) {
        if (laned[j]) continue;
        Accumulator& acc = *accs[j];
        const int64_t before = acc.ApproxBytes();
        if (inputs[j].field != nullptr) {
          const ColumnBlock::Field& f = *inputs[j].field;
          HG_RETURN_IF_ERROR(f.numbers.type != BsonType::kEOO
                                 ? acc.ProcessNumbers(f.numbers, run, n)
                                 : acc.ProcessElements(f.cells.data(), run, n));
        } else {
          HG_RETURN_IF_ERROR(acc.ProcessRepeated(inputs[j].value, n));
        }
        added += acc.ApproxBytes() - before;
      }
      return sink.account(added).status();
    };

    // A $bucket's groupBy values for this block (bins_), when they are numbers to bin.
    const NumberColumn* binned = nullptr;
    NumberColumn computed;
    if (bins_ && !one_key) {
      if (bins_->arith) {
        arith_columns.clear();
        for (const std::string& name : bins_->arith->fields()) {
          const ColumnBlock::Field* f = block->Find(name);
          arith_columns.push_back(f == nullptr || f->constant ? nullptr : &f->numbers);
        }
        bin_values.resize(static_cast<size_t>(block->num_rows));
        if (bins_->arith->Evaluate(arith_columns, rows->data(), num_rows, bin_values.data(),
                                   &computed.type)) {
          computed.values = bin_values.data();
          binned = &computed;
        }
      } else if (varying.size() == 1 && varying[0]->name == bins_->field) {
        binned = &varying[0]->numbers;
      }
    }
    if (binned != nullptr && BinRows(*binned, *rows, num_rows, bins_->bounds, &bin_of)) {
      // The rows of each bin, in row order, folded into its group.
      const size_t outside = bins_->bounds.size() - 1;
      bin_starts.assign(bins_->bounds.size() + 1, 0);
      for (size_t i = 0; i < num_rows; ++i) ++bin_starts[bin_of[i] + 1];
      for (size_t k = 0; k < bins_->bounds.size(); ++k) bin_starts[k + 1] += bin_starts[k];
      bin_rows.resize(num_rows);
      bin_at.assign(bin_starts.begin(), bin_starts.end() - 1);
      for (size_t i = 0; i < num_rows; ++i) bin_rows[bin_at[bin_of[i]]++] = (*rows)[i];
      for (size_t k = 0; k < bins_->bounds.size(); ++k) {
        const size_t n = bin_starts[k + 1] - bin_starts[k];
        if (n == 0) continue;
        if (k == outside && bins_->default_key.missing()) return bins_->no_bin;
        HG_ASSIGN_OR_RETURN(auto* accs,
                            sink.group(k == outside ? bins_->default_key : bins_->boundaries[k]));
        HG_RETURN_IF_ERROR(fold(*accs, bin_rows.data() + bin_starts[k], n));
      }
    } else if (one_key) {
      HG_ASSIGN_OR_RETURN(Value key, sink.key(key_doc(key_row, key_bound)));
      HG_ASSIGN_OR_RETURN(auto* accs, sink.group(key));
      HG_RETURN_IF_ERROR(fold(*accs, rows->data(), num_rows));
    } else {
      // A key per row. When every $dateTrunc of the varying date field has fixed-width bins (date
      // parts always do), a row whose date lies in the bins of the last evaluated row shares that
      // row's key; so does
      // a row whose varying fields hold the same cells as that row's (the key expression is
      // deterministic). The rows between two key evaluations form a run folded at once.
      const bool fixed = t != nullptr && dates &&
                         std::find(t->widths.begin(), t->widths.end(), 0) == t->widths.end();
      int64_t bin_lo = 0, bin_hi = 0;  // [bin_lo, bin_hi): dates with the current key
      bool have_bin = false;
      std::vector<std::unique_ptr<Accumulator>>* accs = nullptr;
      size_t run_start = 0;  // the first row of the current run
      auto same_cells = [&](uint32_t a, uint32_t b) {
        return std::all_of(varying.begin(), varying.end(),
                           [&](const ColumnBlock::Field* f) { return f->SameCell(a, b); });
      };
      for (size_t i = 0; i < num_rows; ++i) {
        const uint32_t r = (*rows)[i];
        const int64_t d = fixed ? date_at(r) : 0;
        if (have_bin && d >= bin_lo && d < bin_hi) continue;
        if (accs != nullptr && same_cells((*rows)[run_start], r)) continue;
        if (accs != nullptr) {
          HG_RETURN_IF_ERROR(fold(*accs, rows->data() + run_start, i - run_start));
        }
        run_start = i;
        BsonObj doc = key_doc(r);
        HG_ASSIGN_OR_RETURN(Value key, sink.key(doc));
        HG_ASSIGN_OR_RETURN(accs, sink.group(key));
        have_bin = fixed;
        bin_lo = INT64_MIN;
        bin_hi = INT64_MAX;
        for (size_t k = 0; fixed && k < t->truncs.size(); ++k) {
          StatusWith<Value> start = t->truncs[k]->Evaluate(doc, vars);
          int64_t end = 0;
          if (!start.ok() || !start.value().IsDate() ||
              __builtin_add_overflow(start.value().DateMillis(), t->widths[k], &end)) {
            have_bin = false;
            break;
          }
          bin_lo = std::max(bin_lo, start.value().DateMillis());
          bin_hi = std::min(bin_hi, end);
        }
        for (size_t k = 0; have_bin && k < t->parts.size(); ++k) {
          int64_t lo = 0, hi = 0;
          t->parts[k].BinOf(d, &lo, &hi);
          bin_lo = std::max(bin_lo, lo);
          bin_hi = std::min(bin_hi, hi);
        }
      }
      if (accs != nullptr) {
        HG_RETURN_IF_ERROR(fold(*accs, rows->data() + run_start, num_rows - run_start));
      }
    }
  }
}

}  // namespace hourglass::pipeline
