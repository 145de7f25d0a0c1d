// $project, $addFields/$set and $unset: a tree of per-field actions applied to each document.
//
// Inclusion ($project {a: 1, "b.c": 1, d: <expr>}): kept fields come out in the input
// document's order, then computed fields in spec order; _id is kept unless {_id: 0}.
// Exclusion ($project {a: 0}, $unset): everything but the named paths. $addFields: every field
// kept, computed fields replace existing ones in place or are appended. Paths through arrays
// apply to each object member of the array. Expressions always see the whole input document.
#include <algorithm>
#include <map>

#include "pipeline/block_read_ahead.h"
#include "pipeline/column_arith.h"
#include "pipeline/column_block.h"
#include "pipeline/dependencies.h"
#include "pipeline/group_block.h"
#include "pipeline/stage.h"
#include "query/path.h"

namespace hourglass::pipeline {

using bson::BsonBuilder;
using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;
using OptDoc = std::optional<BsonObj>;

namespace {

enum class Mode { kInclusion, kExclusion, kAddFields };

struct Node;

// Forms of a computed field's expression that column blocks can evaluate without a document per
// row (ProjectionBlocks); each gives exactly the value the expression gives.
struct ColumnForms {
  std::optional<std::string> alias;          // "$f": the top-level field f itself
  std::shared_ptr<const ColumnArith> arith;  // arithmetic of number columns
  // {$dateTrunc: {date: "$f", ...}} of one field in bins of a fixed width (units up to an hour):
  // a date in [t, t + width), where t is the truncation of another date, truncates to t too.
  std::string trunc_date;
  int64_t trunc_width = 0;
  // A date part of one field ($hour: "$f", $dateToString...), one value per bin of its date.
  std::optional<DatePartBins> part;

  static ColumnForms Of(const BsonElement& spec, const FieldDependencies& reads);
};

struct Action {
  enum Kind { kInclude, kExclude, kCompute, kSubtree } kind;
  ExpressionPtr expr;
  std::unique_ptr<Node> node;
  FieldDependencies reads;  // kCompute: the top-level fields the expression reads
  ColumnForms forms;        // kCompute
};

ColumnForms ColumnForms::Of(const BsonElement& spec, const FieldDependencies& reads) {
  ColumnForms forms;
  if (spec.type() == BsonType::kString) {
    if (auto f = TopLevelFieldReference(spec)) forms.alias = std::string(*f);
    return forms;
  }
  if (auto arith = ColumnArith::Compile(spec)) {
    forms.arith = std::make_shared<const ColumnArith>(std::move(*arith));
  }
  if (spec.type() != BsonType::kObject || spec.Obj().NumFields() != 1 || reads.random ||
      reads.needs_whole_document || reads.fields.size() != 1) {
    return forms;
  }
  if (std::optional<DatePartBins> part = DatePartBinsOf(spec.Obj())) {
    if (part->field == *reads.fields.begin()) forms.part = std::move(part);
    return forms;
  }
  const BsonElement op = spec.Obj().FirstElement();
  if (op.FieldName() != "$dateTrunc" || op.type() != BsonType::kObject) return forms;
  const std::optional<std::string_view> d = TopLevelFieldReference(op.Obj()["date"]);
  if (!d || *reads.fields.begin() != *d) return forms;
  const DateTruncBins bins = DateTruncBinsOf(op.Obj());
  if (!bins.fixed || bins.min_width <= 0) return forms;
  forms.trunc_date = std::string(*d);
  forms.trunc_width = bins.min_width;
  return forms;
}

struct Node {
  std::vector<std::string> order;  // spec order of the children
  std::map<std::string, Action, std::less<>> children;

  const Action* Find(std::string_view n) const {
    auto it = children.find(n);
    return it == children.end() ? nullptr : &it->second;
  }
  bool HasComputed() const {
    for (const auto& [n, a] : children) {
      if (a.kind == Action::kCompute) return true;
      if (a.kind == Action::kSubtree && a.node->HasComputed()) return true;
    }
    return false;
  }
};

struct Ctx {
  const BsonObj& root;
  Variables& vars;
};

StatusWith<BsonObj> ApplyInclusion(const Node& node, const BsonObj& obj, Ctx& c);
StatusWith<BsonObj> ApplyExclusion(const Node& node, const BsonObj& obj);
StatusWith<BsonObj> ApplyAddFields(const Node& node, const BsonObj& obj, Ctx& c);

// Applies a subtree to an array: object members recursively, nested arrays likewise; other
// members are kept (exclusion), dropped (inclusion) or replaced by the computed fields.
StatusWith<BsonObj> ApplyToArray(Mode mode, const Node& node, const BsonObj& arr, Ctx& c) {
  BsonBuilder b;
  int i = 0;
  for (const auto& m : arr) {
    std::string key = std::to_string(i);
    if (m.type() == BsonType::kObject) {
      StatusWith<BsonObj> r = mode == Mode::kInclusion   ? ApplyInclusion(node, m.Obj(), c)
                              : mode == Mode::kExclusion ? ApplyExclusion(node, m.Obj())
                                                         : ApplyAddFields(node, m.Obj(), c);
      if (!r.ok()) return r.status();
      b.AppendObject(key, r.value());
    } else if (m.type() == BsonType::kArray) {
      HG_ASSIGN_OR_RETURN(BsonObj r, ApplyToArray(mode, node, m.Obj(), c));
      b.AppendArray(key, r);
    } else if (mode == Mode::kExclusion) {
      b.AppendElementAs(m, key);
    } else if (mode == Mode::kAddFields || node.HasComputed()) {
      StatusWith<BsonObj> r = mode == Mode::kInclusion ? ApplyInclusion(node, BsonObj(), c)
                                                       : ApplyAddFields(node, BsonObj(), c);
      if (!r.ok()) return r.status();
      b.AppendObject(key, r.value());
    } else {
      continue;
    }
    ++i;
  }
  return b.Obj();
}

StatusWith<BsonObj> ApplyInclusion(const Node& node, const BsonObj& obj, Ctx& c) {
  BsonBuilder b;
  for (const auto& e : obj) {
    const Action* a = node.Find(e.FieldName());
    if (a == nullptr) continue;
    if (a->kind == Action::kInclude) {
      b.AppendElement(e);
    } else if (a->kind == Action::kSubtree) {
      if (e.type() == BsonType::kObject) {
        HG_ASSIGN_OR_RETURN(BsonObj sub, ApplyInclusion(*a->node, e.Obj(), c));
        b.AppendObject(e.FieldName(), sub);
      } else if (e.type() == BsonType::kArray) {
        HG_ASSIGN_OR_RETURN(BsonObj sub, ApplyToArray(Mode::kInclusion, *a->node, e.Obj(), c));
        b.AppendArray(e.FieldName(), sub);
      } else if (a->node->HasComputed()) {
        HG_ASSIGN_OR_RETURN(BsonObj sub, ApplyInclusion(*a->node, BsonObj(), c));
        b.AppendObject(e.FieldName(), sub);
      }
    }
  }
  for (const auto& name : node.order) {
    const Action& a = node.children.at(name);
    if (a.kind == Action::kCompute) {
      HG_ASSIGN_OR_RETURN(Value v, a.expr->Evaluate(c.root, c.vars));
      v.AppendTo(b, name);
    } else if (a.kind == Action::kSubtree && obj.GetField(name).eoo() && a.node->HasComputed()) {
      HG_ASSIGN_OR_RETURN(BsonObj sub, ApplyInclusion(*a.node, BsonObj(), c));
      b.AppendObject(name, sub);
    }
  }
  return b.Obj();
}

StatusWith<BsonObj> ApplyExclusion(const Node& node, const BsonObj& obj) {
  BsonBuilder b;
  for (const auto& e : obj) {
    const Action* a = node.Find(e.FieldName());
    if (a == nullptr || a->kind == Action::kInclude) {
      b.AppendElement(e);
    } else if (a->kind == Action::kSubtree) {
      if (e.type() == BsonType::kObject) {
        HG_ASSIGN_OR_RETURN(BsonObj sub, ApplyExclusion(*a->node, e.Obj()));
        b.AppendObject(e.FieldName(), sub);
      } else if (e.type() == BsonType::kArray) {
        BsonObj empty;
        Variables unused;
        Ctx c{empty, unused};
        HG_ASSIGN_OR_RETURN(BsonObj sub, ApplyToArray(Mode::kExclusion, *a->node, e.Obj(), c));
        b.AppendArray(e.FieldName(), sub);
      } else {
        b.AppendElement(e);
      }
    }
  }
  return b.Obj();
}

StatusWith<BsonObj> ApplyAddFields(const Node& node, const BsonObj& obj, Ctx& c) {
  BsonBuilder b;
  for (const auto& e : obj) {
    const Action* a = node.Find(e.FieldName());
    if (a == nullptr) {
      b.AppendElement(e);
    } else if (a->kind == Action::kCompute) {
      HG_ASSIGN_OR_RETURN(Value v, a->expr->Evaluate(c.root, c.vars));
      v.AppendTo(b, e.FieldName());
    } else if (e.type() == BsonType::kObject) {
      HG_ASSIGN_OR_RETURN(BsonObj sub, ApplyAddFields(*a->node, e.Obj(), c));
      b.AppendObject(e.FieldName(), sub);
    } else if (e.type() == BsonType::kArray) {
      HG_ASSIGN_OR_RETURN(BsonObj sub, ApplyToArray(Mode::kAddFields, *a->node, e.Obj(), c));
      b.AppendArray(e.FieldName(), sub);
    } else {
      HG_ASSIGN_OR_RETURN(BsonObj sub, ApplyAddFields(*a->node, BsonObj(), c));
      b.AppendObject(e.FieldName(), sub);
    }
  }
  for (const auto& name : node.order) {
    if (!obj.GetField(name).eoo()) continue;
    const Action& a = node.children.at(name);
    if (a.kind == Action::kCompute) {
      HG_ASSIGN_OR_RETURN(Value v, a.expr->Evaluate(c.root, c.vars));
      v.AppendTo(b, name);
    } else {
      HG_ASSIGN_OR_RETURN(BsonObj sub, ApplyAddFields(*a.node, BsonObj(), c));
      b.AppendObject(name, sub);
    }
  }
  return b.Obj();
}

class ProjectionStage : public Stage {
 public:
  ProjectionStage(std::string_view name, Mode mode, std::unique_ptr<Node> root, int64_t now)
      : name_(name), mode_(mode), root_(std::move(root)), now_(now) {}
  std::string_view name() const override { return name_; }

  StatusWith<BsonObj> Apply(const BsonObj& doc) const {
    Variables vars(now_);
    Ctx c{doc, vars};
    switch (mode_) {
      case Mode::kInclusion:
        return ApplyInclusion(*root_, doc, c);
      case Mode::kExclusion:
        return ApplyExclusion(*root_, doc);
      case Mode::kAddFields:
        return ApplyAddFields(*root_, doc, c);
    }
    return doc;
  }

  std::unique_ptr<DocumentStream> Bind(std::unique_ptr<DocumentStream> input) const override;

  // Whether blocks can pass through: every field named at the top level (no dotted paths), and
  // every expression reads top-level fields only (not $$ROOT).
  bool Flat() const {
    for (const auto& [name, a] : root_->children) {
      if (a.kind == Action::kSubtree) return false;
      if (a.kind == Action::kCompute && a.reads.needs_whole_document) return false;
    }
    return true;
  }
  Mode mode() const { return mode_; }
  const Node& root() const { return *root_; }
  int64_t now() const { return now_; }

 private:
  std::string_view name_;
  Mode mode_;
  std::unique_ptr<Node> root_;
  int64_t now_;
};

// The projection over column blocks (column_block.h): kept fields pass through as they are, and
// computed fields become fields of the block, evaluated for the selected rows only. A computed
// field takes the first of these forms that applies to the block:
//  - a field renamed ("$f"): f's column or constant itself;
//  - an expression of fields that are constant in the block: evaluated once, a constant;
//  - arithmetic of number columns, or a $dateTrunc in fixed bins: a column of numbers computed
//    without a document per row;
//  - otherwise per row, in row order (then field order, as the document path evaluates them),
//    each on a document made of the fields its expression reads; a row whose cells equal those
//    of the last row evaluated takes that row's value.
// Only the per-row form reports an expression's error: the others leave the block to it when
// they meet one, so errors come in the document path's order.
//
// The blocks are read through a BlockReadAhead of their own: the source reads and decodes the next
// ones on a helper thread while this one computes and its consumer folds (the projection itself
// runs on the consumer's thread, where its values are freed).
class ProjectionBlocks : public BlockSource {
 public:
  ProjectionBlocks(const ProjectionStage& stage, BlockSource* in)
      : stage_(stage), ahead_(std::make_unique<BlockReadAhead>(*in)), in_(ahead_.get()) {}

  void RequireFields(const std::vector<std::string>& names) override {
    std::vector<std::string> upstream;
    auto need = [&](const std::string& f) {
      if (std::find(upstream.begin(), upstream.end(), f) == upstream.end()) upstream.push_back(f);
    };
    for (const std::string& name : names) {
      const Action* a = stage_.root().Find(name);
      if (a != nullptr && a->kind == Action::kCompute) {
        computed_.push_back({name, a, {}});
        for (const std::string& f : a->reads.fields) need(f);
      } else if (a != nullptr ? a->kind == Action::kInclude : stage_.mode() != Mode::kInclusion) {
        passed_.push_back(name);
        need(name);
      }  // else excluded, or not kept by an inclusion: missing in every row
    }
    // Computed fields in the stage's order, as the document path evaluates them.
    const auto& order = stage_.root().order;
    std::sort(computed_.begin(), computed_.end(), [&](const auto& x, const auto& y) {
      return std::find(order.begin(), order.end(), x.name) <
             std::find(order.begin(), order.end(), y.name);
    });
    in_->RequireFields(upstream);
  }
  // Computed fields read cells: no field is taken by its bounds.
  void AcceptBounds(const std::vector<std::string>&) override {}
  StatusWith<const ColumnBlock::Field*> DecodeBounded(std::string_view name) override {
    return Status(ErrorCode::kInternalError,
                  "a projection has no bounded field " + std::string(name));
  }

  StatusWith<const ColumnBlock*> NextBlock() override {
    HG_ASSIGN_OR_RETURN(const ColumnBlock* in, in_->NextBlock());
    if (in == nullptr) return static_cast<const ColumnBlock*>(nullptr);
    out_.num_rows = in->num_rows;
    out_.all_rows = in->all_rows;
    out_.selection = in->selection;
    out_.fields.clear();
    for (const std::string& name : passed_) {
      if (const ColumnBlock::Field* f = in->Find(name)) out_.fields.push_back(*f);
    }
    values_.clear();
    if (computed_.empty()) return static_cast<const ColumnBlock*>(&out_);
    const size_t rows = static_cast<size_t>(in->num_rows);
    const uint32_t* run = in->selection.data();
    if (in->all_rows) {
      while (all_.size() < rows) all_.push_back(static_cast<uint32_t>(all_.size()));
      run = all_.data();
    }
    const size_t n = static_cast<size_t>(in->SelectedRows());
    // The cells point into values_, reserved for every cell so that it never moves.
    values_.reserve(rows * computed_.size());
    Variables vars(stage_.now());
    std::vector<size_t> per_row;  // of computed_, the fields evaluated per row
    for (size_t i = 0; i < computed_.size(); ++i) {
      ColumnBlock::Field out{.name = computed_[i].name};
      switch (n == 0 ? Form::kMissing : ByColumns(*in, computed_[i], run, n, vars, out)) {
        case Form::kMissing:
          break;
        case Form::kField:
          out_.fields.push_back(std::move(out));
          break;
        case Form::kPerRow:
          per_row.push_back(i);
          break;
      }
    }
    if (per_row.empty()) return static_cast<const ColumnBlock*>(&out_);
    const size_t first = out_.fields.size();
    for (size_t i : per_row) {
      out_.fields.push_back(
          ColumnBlock::Field{.name = computed_[i].name, .cells = std::vector<BsonElement>(rows)});
    }
    // Per field: the fields it reads in this block, and the last row it was evaluated for.
    std::vector<std::vector<const ColumnBlock::Field*>> reads(per_row.size());
    for (size_t k = 0; k < per_row.size(); ++k) {
      for (const std::string& f : computed_[per_row[k]].action->reads.fields) {
        reads[k].push_back(in->Find(f));
      }
    }
    std::vector<int64_t> last(per_row.size(), -1);
    CellScratch scratch;
    for (size_t j = 0; j < n; ++j) {
      const uint32_t r = run[j];
      for (size_t k = 0; k < per_row.size(); ++k) {
        const Action& a = *computed_[per_row[k]].action;
        std::vector<BsonElement>& cells = out_.fields[first + k].cells;
        if (last[k] >= 0 && !a.reads.random &&
            std::all_of(reads[k].begin(), reads[k].end(), [&](const ColumnBlock::Field* f) {
              return f == nullptr || f->constant || f->SameCell(static_cast<size_t>(last[k]), r);
            })) {
          cells[r] = cells[static_cast<size_t>(last[k])];
          continue;
        }
        BsonBuilder b;
        for (const ColumnBlock::Field* field : reads[k]) {
          if (field == nullptr) continue;
          const BsonElement cell = field->constant ? field->value : field->Cell(r, scratch);
          if (!cell.eoo()) b.AppendElementAs(cell, field->name);
        }
        HG_ASSIGN_OR_RETURN(Value v, a.expr->Evaluate(b.Obj(), vars));
        values_.push_back(std::move(v));
        cells[r] = values_.back().element();
        last[k] = r;
      }
    }
    return static_cast<const ColumnBlock*>(&out_);
  }

 private:
  struct Computed {
    std::string name;
    const Action* action;
    std::vector<uint64_t> numbers;  // the current block's column of numbers, when computed so
  };
  enum class Form { kField, kMissing, kPerRow };

  // Computes `c` for the rows run[0..n) (n > 0) of `in` into `out` by the first of its column
  // forms that applies (kField; kMissing when it is missing in every row), or kPerRow.
  Form ByColumns(const ColumnBlock& in, Computed& c, const uint32_t* run, size_t n, Variables& vars,
                 ColumnBlock::Field& out) {
    const Action& a = *c.action;
    const ColumnForms& forms = a.forms;
    if (forms.alias) {
      const ColumnBlock::Field* f = in.Find(*forms.alias);
      if (f == nullptr) return Form::kMissing;
      out = *f;
      out.name = c.name;
      return Form::kField;
    }
    std::vector<const ColumnBlock::Field*> reads;
    bool constant = !a.reads.random;
    for (const std::string& name : a.reads.fields) {
      reads.push_back(in.Find(name));
      constant = constant && (reads.back() == nullptr || reads.back()->constant);
    }
    if (constant) {
      BsonBuilder b;
      for (const ColumnBlock::Field* f : reads) {
        if (f != nullptr) b.AppendElementAs(f->value, f->name);
      }
      StatusWith<Value> v = a.expr->Evaluate(b.Obj(), vars);
      if (!v.ok()) return Form::kPerRow;
      if (v.value().missing()) return Form::kMissing;
      values_.push_back(std::move(v).value());
      out.constant = true;
      out.value = values_.back().element();
      return Form::kField;
    }
    if (!forms.arith && forms.trunc_width == 0 && !forms.part) return Form::kPerRow;
    c.numbers.resize(static_cast<size_t>(in.num_rows));
    if (forms.arith) {
      std::vector<const NumberColumn*> columns;
      for (const std::string& name : forms.arith->fields()) {
        const ColumnBlock::Field* f = in.Find(name);
        columns.push_back(f == nullptr || f->constant ? nullptr : &f->numbers);
      }
      BsonType type = BsonType::kEOO;
      if (!forms.arith->Evaluate(columns, run, n, c.numbers.data(), &type)) return Form::kPerRow;
      out.numbers = NumberColumn{type, c.numbers.data(), nullptr};
      return Form::kField;
    }
    // A $dateTrunc or a date part: evaluated once per bin of the date, a column of the
    // truncations' dates or of the parts' values.
    const ColumnBlock::Field* f = reads.empty() ? nullptr : reads[0];
    if (f == nullptr || f->constant) return Form::kPerRow;
    if (forms.part) out.cells.assign(static_cast<size_t>(in.num_rows), BsonElement());
    const size_t mark = values_.size();
    auto per_row = [&] {
      values_.resize(mark);  // a value per row will follow: the reserved room must remain
      return Form::kPerRow;
    };
    CellScratch scratch;
    int64_t lo = 0, hi = 0;  // [lo, hi): the dates of the current bin
    bool have_bin = false;
    const bool dates = f->numbers.type == BsonType::kDate;
    for (size_t i = 0; i < n; ++i) {
      int64_t d = 0;
      if (dates && f->numbers.Present(run[i])) {
        d = f->numbers.Int(run[i]);
      } else if (const BsonElement cell = f->Cell(run[i], scratch);
                 cell.type() == BsonType::kDate) {
        d = cell.DateMillis();
      } else {
        return per_row();
      }
      if (!have_bin || d < lo || d >= hi) {
        const BsonElement cell = f->Cell(run[i], scratch);
        BsonBuilder b;
        b.AppendElementAs(cell, f->name);
        StatusWith<Value> t = a.expr->Evaluate(b.Obj(), vars);
        if (!t.ok()) return per_row();
        if (forms.part) {
          forms.part->BinOf(d, &lo, &hi);
          values_.push_back(std::move(t).value());
        } else if (!t.value().IsDate() ||
                   __builtin_add_overflow(t.value().DateMillis(), forms.trunc_width, &hi)) {
          return per_row();
        } else {
          lo = t.value().DateMillis();
        }
        have_bin = true;
      }
      if (forms.part) {
        out.cells[run[i]] = values_.back().element();
      } else {
        c.numbers[run[i]] = static_cast<uint64_t>(lo);
      }
    }
    if (!forms.part) out.numbers = NumberColumn{BsonType::kDate, c.numbers.data(), nullptr};
    return Form::kField;
  }

  const ProjectionStage& stage_;
  std::unique_ptr<BlockReadAhead> ahead_;
  BlockSource* in_;  // ahead_
  std::vector<std::string> passed_;
  std::vector<Computed> computed_;
  std::vector<uint32_t> all_;  // all_[i] == i: the rows of a block whose rows all count
  std::vector<Value> values_;  // the computed cells and constants of the current block
  ColumnBlock out_;
};

class ProjectionStream : public MapStream<ProjectionStage> {
 public:
  using MapStream::MapStream;
  BlockSource* AsBlockSource() override {
    if (!s_->Flat()) return nullptr;
    BlockSource* in = in_->AsBlockSource();
    if (in == nullptr) return nullptr;
    blocks_ = std::make_unique<ProjectionBlocks>(*s_, in);
    return blocks_.get();
  }

 private:
  std::unique_ptr<ProjectionBlocks> blocks_;
};

std::unique_ptr<DocumentStream> ProjectionStage::Bind(std::unique_ptr<DocumentStream> input) const {
  return std::make_unique<ProjectionStream>(Self(this), std::move(input));
}

// Builds the tree from a spec; `stage` names the stage in errors ("$project", "$addFields").
class TreeBuilder {
 public:
  TreeBuilder(std::string_view stage, Mode mode, ParseContext pc)
      : stage_(stage), mode_(mode), pc_(std::move(pc)) {}

  Status Add(Node& node, std::string_view prefix, const BsonElement& f) {
    std::string_view field = f.FieldName();
    std::string full =
        prefix.empty() ? std::string(field) : std::string(prefix) + "." + std::string(field);
    auto parts = query::SplitPath(field);
    // Every component of the path, not only the first ("a.$" is no positional projection here).
    const bool dollar = std::any_of(parts.begin(), parts.end(),
                                    [](const std::string& p) { return p.starts_with('$'); });
    if (field.empty() || dollar) {
      return PipelineError(
          field.empty() ? 40352 : 16410,
          "Invalid " + std::string(stage_) + " :: caused by :: FieldPath " +
              (field.empty() ? "cannot be constructed with empty string"
                             : "field names may not start with '$'. Consider using $getField "
                               "or $setField."));
    }
    Node* cur = &node;
    std::string path_so_far(prefix);
    for (size_t i = 0; i + 1 < parts.size(); ++i) {
      if (parts[i].empty()) return EmptyComponent();
      path_so_far += (path_so_far.empty() ? "" : ".") + parts[i];
      HG_ASSIGN_OR_RETURN(cur, Subtree(*cur, parts[i], path_so_far));
    }
    const std::string& leaf = parts.back();
    if (leaf.empty()) return EmptyComponent();
    // Decide what the value means.
    if (f.type() == BsonType::kObject) {
      BsonObj o = f.Obj();
      if (!o.IsEmpty() && o.FirstElement().FieldName().substr(0, 1) == "$") {
        return AddCompute(*cur, leaf, full, f);
      }
      if (o.IsEmpty()) {
        if (mode_ == Mode::kAddFields) return AddCompute(*cur, leaf, full, f);
        return PipelineError(51270, "Invalid " + std::string(stage_) +
                                        " :: caused by :: An empty sub-projection is not a valid "
                                        "value. Found empty object at path");
      }
      HG_ASSIGN_OR_RETURN(Node * sub, Subtree(*cur, leaf, full));
      for (const auto& sf : o) HG_RETURN_IF_ERROR(Add(*sub, full, sf));
      return Status::OK();
    }
    const bool is_flag = f.IsNumber() || f.type() == BsonType::kBool;
    if (mode_ == Mode::kAddFields || !is_flag) return AddCompute(*cur, leaf, full, f);
    const bool include = f.Truthy();
    const bool is_id = full == "_id";
    if (!is_id) {
      if (include && saw_exclusion_) return MixError(false, full);
      if (!include && (saw_inclusion_ || saw_compute_)) return MixError(true, full);
      (include ? saw_inclusion_ : saw_exclusion_) = true;
      (include ? first_inclusion_ : first_exclusion_) = full;
    }
    return Insert(*cur, leaf, full,
                  Action{include ? Action::kInclude : Action::kExclude, {}, {}, {}, {}});
  }

  bool saw_inclusion() const { return saw_inclusion_ || saw_compute_; }
  bool saw_exclusion() const { return saw_exclusion_; }

 private:
  Status EmptyComponent() {
    return PipelineError(15998, "Invalid " + std::string(stage_) +
                                    " :: caused by :: FieldPath field names may not be empty "
                                    "strings.");
  }
  Status MixError(bool exclusion_in_inclusion, const std::string& path) {
    if (exclusion_in_inclusion) {
      return PipelineError(31254, "Invalid " + std::string(stage_) +
                                      " :: caused by :: Cannot do exclusion on field " + path +
                                      " in inclusion projection");
    }
    return PipelineError(31253, "Invalid " + std::string(stage_) +
                                    " :: caused by :: Cannot do inclusion on field " + path +
                                    " in exclusion projection");
  }
  Status AddCompute(Node& node, const std::string& leaf, const std::string& full,
                    const BsonElement& f) {
    if (mode_ != Mode::kAddFields) {
      if (saw_exclusion_) {
        return PipelineError(31252, "Invalid " + std::string(stage_) +
                                        " :: caused by :: Cannot use expression other than $meta "
                                        "in exclusion projection");
      }
      saw_compute_ = true;
    }
    HG_ASSIGN_OR_RETURN(auto e, Expression::ParseExpression(f, pc_));
    FieldDependencies reads = ExpressionDependencies(f);
    ColumnForms forms = ColumnForms::Of(f, reads);
    return Insert(node, leaf, full,
                  Action{Action::kCompute, std::move(e), {}, std::move(reads), std::move(forms)});
  }
  Status Insert(Node& node, const std::string& leaf, const std::string& full, Action a) {
    if (node.children.count(leaf)) {
      return PipelineError(
          31250, "Invalid " + std::string(stage_) + " :: caused by :: Path collision at " + full);
    }
    node.order.push_back(leaf);
    node.children.emplace(leaf, std::move(a));
    return Status::OK();
  }
  StatusWith<Node*> Subtree(Node& node, const std::string& name, const std::string& full) {
    auto it = node.children.find(name);
    if (it == node.children.end()) {
      node.order.push_back(name);
      it = node.children
               .emplace(name, Action{Action::kSubtree, {}, std::make_unique<Node>(), {}, {}})
               .first;
    } else if (it->second.kind != Action::kSubtree) {
      return PipelineError(
          31249, "Invalid " + std::string(stage_) + " :: caused by :: Path collision at " + full);
    }
    return it->second.node.get();
  }

  std::string_view stage_;
  Mode mode_;
  ParseContext pc_;
  bool saw_inclusion_ = false, saw_exclusion_ = false, saw_compute_ = false;
  std::string first_inclusion_, first_exclusion_;
};

}  // namespace

Status ParseProjectStage(const BsonElement& spec, const PipelineContext& ctx, StageList* out) {
  if (spec.type() != BsonType::kObject) {
    return PipelineError(15969, "$project specification must be an object");
  }
  if (spec.Obj().IsEmpty()) {
    return PipelineError(51272,
                         "Invalid $project :: caused by :: projection specification must "
                         "have at least one field");
  }
  // Mode is unknown until the whole spec is seen; parse as a projection and decide afterwards.
  TreeBuilder tb("$project", Mode::kInclusion, ctx.Expressions());
  auto root = std::make_unique<Node>();
  for (const auto& f : spec.Obj()) HG_RETURN_IF_ERROR(tb.Add(*root, "", f));
  Mode mode = tb.saw_inclusion() || !tb.saw_exclusion() ? Mode::kInclusion : Mode::kExclusion;
  if (mode == Mode::kExclusion) {
    // Only {_id: 0} plus exclusions, or {_id: 0} alone.
  } else if (!tb.saw_inclusion()) {
    // Only _id was named: {_id: 1} keeps just _id; {_id: 0} alone is an exclusion.
    const Action* id = root->Find("_id");
    if (id != nullptr && id->kind == Action::kExclude) mode = Mode::kExclusion;
  }
  if (mode == Mode::kInclusion && root->Find("_id") == nullptr) {
    // _id is kept by default in inclusion projections.
    root->order.insert(root->order.begin(), "_id");
    root->children.emplace("_id", Action{Action::kInclude, {}, {}, {}, {}});
  }
  out->push_back(
      std::make_shared<ProjectionStage>("$project", mode, std::move(root), ctx.now_millis));
  return Status::OK();
}

Status ParseAddFieldsStage(const BsonElement& spec, const PipelineContext& ctx, StageList* out) {
  std::string_view name = spec.FieldName();
  if (spec.type() != BsonType::kObject) {
    return PipelineError(40272, std::string(name) + " specification stage must be an object, got " +
                                    std::string(bson::TypeName(spec.type())));
  }
  TreeBuilder tb(name, Mode::kAddFields, ctx.Expressions());
  auto root = std::make_unique<Node>();
  for (const auto& f : spec.Obj()) HG_RETURN_IF_ERROR(tb.Add(*root, "", f));
  out->push_back(std::make_shared<ProjectionStage>(
      name == "$set" ? "$set" : "$addFields", Mode::kAddFields, std::move(root), ctx.now_millis));
  return Status::OK();
}

Status ParseUnsetStage(const BsonElement& spec, const PipelineContext& ctx, StageList* out) {
  std::vector<std::string_view> fields;
  if (spec.type() == BsonType::kString) {
    fields.push_back(spec.Str());
  } else if (spec.type() == BsonType::kArray) {
    for (const auto& m : spec.Obj()) {
      if (m.type() != BsonType::kString) {
        return PipelineError(31120,
                             "$unset specification must be a string or an array "
                             "containing only string values");
      }
      fields.push_back(m.Str());
    }
    if (fields.empty()) {
      return PipelineError(31119,
                           "$unset specification must be a string or an array with at "
                           "least one field");
    }
  } else {
    return PipelineError(31002, "$unset specification must be a string or an array");
  }
  TreeBuilder tb("$unset", Mode::kExclusion, ctx.Expressions());
  auto root = std::make_unique<Node>();
  BsonBuilder b;
  for (auto f : fields) b.AppendInt32(f, 0);
  BsonObj as_projection = b.Obj();
  for (const auto& f : as_projection) HG_RETURN_IF_ERROR(tb.Add(*root, "", f));
  out->push_back(std::make_shared<ProjectionStage>("$unset", Mode::kExclusion, std::move(root),
                                                   ctx.now_millis));
  return Status::OK();
}

namespace {

BsonObj SetPathIn(const BsonObj& doc, const std::vector<std::string>& path, size_t i,
                  const Value& v) {
  BsonBuilder b;
  bool found = false;
  const std::string& name = path[i];
  for (const auto& e : doc) {
    if (e.FieldName() != name || found) {
      b.AppendElement(e);
      continue;
    }
    found = true;
    if (i + 1 == path.size()) {
      v.AppendTo(b, name);
    } else {
      BsonObj sub = e.type() == BsonType::kObject ? e.Obj() : BsonObj();
      b.AppendObject(name, SetPathIn(sub, path, i + 1, v));
    }
  }
  if (!found) {
    if (i + 1 == path.size()) {
      v.AppendTo(b, name);
    } else if (!v.missing()) {
      b.AppendObject(name, SetPathIn(BsonObj(), path, i + 1, v));
    }
  }
  return b.Obj();
}

// SetPathValues at depth `i`: `writes` (with their order among all writes) all go below `doc`.
BsonObj SetPathsIn(const BsonObj& doc, const std::vector<std::pair<size_t, PathWrite>>& writes,
                   size_t i) {
  // The writes by field name at this depth, names in order of first write. Independent paths:
  // a name has one leaf write, or only writes below it.
  struct Field {
    std::string_view name;
    std::vector<std::pair<size_t, PathWrite>> writes;
    bool leaf = false;
    bool seen = false;  // met in `doc` (its first occurrence only is written)
  };
  std::vector<Field> fields;
  for (const auto& w : writes) {
    std::string_view name = (*w.second.path)[i];
    auto it =
        std::find_if(fields.begin(), fields.end(), [&](const Field& f) { return f.name == name; });
    if (it == fields.end()) it = fields.insert(fields.end(), Field{name, {}, false, false});
    it->leaf = w.second.path->size() == i + 1;
    it->writes.push_back(w);
  }
  auto write_field = [&](BsonBuilder& b, const Field& f, const BsonObj& sub) {
    if (f.leaf) {
      f.writes.front().second.value->AppendTo(b, f.name);  // missing: removed
    } else {
      b.AppendObject(f.name, SetPathsIn(sub, f.writes, i + 1));
    }
  };
  BsonBuilder b;
  for (const auto& e : doc) {
    auto it = std::find_if(fields.begin(), fields.end(),
                           [&](const Field& f) { return !f.seen && f.name == e.FieldName(); });
    if (it == fields.end()) {
      b.AppendElement(e);
      continue;
    }
    it->seen = true;
    write_field(b, *it, e.type() == BsonType::kObject ? e.Obj() : BsonObj());
  }
  // Fields not in `doc`, created by their first write of a value (a missing value creates
  // nothing), in the order of those writes.
  std::vector<std::pair<size_t, const Field*>> created;
  for (const Field& f : fields) {
    if (f.seen) continue;
    for (const auto& w : f.writes) {
      if (!w.second.value->missing()) {
        created.emplace_back(w.first, &f);
        break;
      }
    }
  }
  std::sort(created.begin(), created.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  for (const auto& [order, f] : created) write_field(b, *f, BsonObj());
  return b.Obj();
}

}  // namespace

BsonObj SetPathValue(const BsonObj& doc, const std::vector<std::string>& path, const Value& v) {
  return SetPathIn(doc, path, 0, v);
}

BsonObj SetPathValues(const BsonObj& doc, const std::vector<PathWrite>& writes) {
  if (writes.size() == 1) return SetPathValue(doc, *writes[0].path, *writes[0].value);
  std::vector<std::pair<size_t, PathWrite>> ordered;
  ordered.reserve(writes.size());
  for (size_t k = 0; k < writes.size(); ++k) ordered.emplace_back(k, writes[k]);
  return SetPathsIn(doc, ordered, 0);
}

bool PathsAreIndependent(const std::vector<const std::vector<std::string>*>& paths) {
  for (size_t a = 0; a < paths.size(); ++a) {
    for (size_t b = 0; b < paths.size(); ++b) {
      if (a == b || paths[a]->size() > paths[b]->size()) continue;
      if (std::equal(paths[a]->begin(), paths[a]->end(), paths[b]->begin())) return false;
    }
  }
  return true;
}

}  // namespace hourglass::pipeline
