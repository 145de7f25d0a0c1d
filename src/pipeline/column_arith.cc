#include "pipeline/column_arith.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>

#include "pipeline/dependencies.h"

namespace hourglass::pipeline {

using bson::BsonElement;
using bson::BsonType;

std::optional<ColumnArith> ColumnArith::Compile(const BsonElement& spec) {
  ColumnArith a;
  bool reads_field = false;
  a.root_ = a.Add(spec, &reads_field);
  if (a.root_ < 0 || !reads_field) return std::nullopt;
  return a;
}

int ColumnArith::Add(const BsonElement& e, bool* reads_field) {
  Node node{};
  switch (e.type()) {
    case BsonType::kString: {
      const std::optional<std::string_view> f = TopLevelFieldReference(e);
      if (!f) return -1;
      const std::string name(*f);
      auto it = std::find(fields_.begin(), fields_.end(), name);
      node.op = Node::Op::kField;
      node.field = static_cast<int>(it - fields_.begin());
      if (it == fields_.end()) fields_.push_back(name);
      *reads_field = true;
      break;
    }
    case BsonType::kInt32:
    case BsonType::kInt64:
    case BsonType::kDouble:
      node.op = Node::Op::kConstant;
      node.constant = e.NumberDouble();  // as the per-row path converts the operand
      node.int_constant = e.NumberLong();
      node.constant_kind = e.type() == BsonType::kInt32   ? Kind::kInt
                           : e.type() == BsonType::kInt64 ? Kind::kLong
                                                          : Kind::kDouble;
      break;
    case BsonType::kObject: {
      if (e.Obj().NumFields() != 1) return -1;
      const BsonElement op = e.Obj().FirstElement();
      const std::string_view name = op.FieldName();
      if (name == "$add") {
        node.op = Node::Op::kAdd;
      } else if (name == "$multiply") {
        node.op = Node::Op::kMultiply;
      } else if (name == "$subtract") {
        node.op = Node::Op::kSubtract;
      } else if (name == "$divide") {
        node.op = Node::Op::kDivide;
      } else if (name == "$cond") {
        // {$cond: [if, then, else]} or {$cond: {if, then, else}}.
        BsonElement parts[3];
        if (op.type() == BsonType::kArray && op.Obj().NumFields() == 3) {
          int i = 0;
          for (const BsonElement& arg : op.Obj()) parts[i++] = arg;
        } else if (op.type() == BsonType::kObject && op.Obj().NumFields() == 3) {
          parts[0] = op.Obj()["if"];
          parts[1] = op.Obj()["then"];
          parts[2] = op.Obj()["else"];
        }
        if (parts[0].eoo() || parts[1].eoo() || parts[2].eoo()) return -1;
        node.op = Node::Op::kCond;
        node.children = {AddComparison(parts[0], reads_field), AddOperand(parts[1], reads_field),
                         AddOperand(parts[2], reads_field)};
        if (std::find(node.children.begin(), node.children.end(), -1) != node.children.end()) {
          return -1;
        }
        break;
      } else {
        return -1;
      }
      if (op.type() != BsonType::kArray) return -1;
      for (const BsonElement& arg : op.Obj()) {
        const int child = AddOperand(arg, reads_field);
        if (child < 0) return -1;
        node.children.push_back(child);
      }
      const bool binary = node.op == Node::Op::kSubtract || node.op == Node::Op::kDivide;
      if (binary && node.children.size() != 2) return -1;
      if (node.children.empty()) return -1;
      break;
    }
    default:
      return -1;
  }
  nodes_.push_back(std::move(node));
  return static_cast<int>(nodes_.size()) - 1;
}

int ColumnArith::AddOperand(const BsonElement& e, bool* reads_field) {
  bool reads = false;
  const int child = Add(e, &reads);
  // An operand without a field could be an integer result (or a date): left to the per-row
  // path, whose promotion rules it would need.
  if (child < 0 || (!reads && nodes_[child].op != Node::Op::kConstant)) return -1;
  *reads_field = *reads_field || reads;
  return child;
}

int ColumnArith::AddComparison(const BsonElement& e, bool* reads_field) {
  if (e.type() != BsonType::kObject || e.Obj().NumFields() != 1) return -1;
  const BsonElement op = e.Obj().FirstElement();
  const std::string_view name = op.FieldName();
  Node node{};
  node.op = Node::Op::kCompare;
  if (name == "$eq") {
    node.compare = Node::Compare::kEq;
  } else if (name == "$ne") {
    node.compare = Node::Compare::kNe;
  } else if (name == "$gt") {
    node.compare = Node::Compare::kGt;
  } else if (name == "$gte") {
    node.compare = Node::Compare::kGte;
  } else if (name == "$lt") {
    node.compare = Node::Compare::kLt;
  } else if (name == "$lte") {
    node.compare = Node::Compare::kLte;
  } else {
    return -1;
  }
  if (op.type() != BsonType::kArray || op.Obj().NumFields() != 2) return -1;
  for (const BsonElement& arg : op.Obj()) {
    const int child = AddOperand(arg, reads_field);
    if (child < 0) return -1;
    node.children.push_back(child);
  }
  nodes_.push_back(std::move(node));
  return static_cast<int>(nodes_.size()) - 1;
}

namespace {

// -1, 0 or 1 as numbers compare in MongoDB: by value, NaN equal to NaN and below every number.
int CompareDoubles(double a, double b) {
  if (a < b) return -1;
  if (a > b) return 1;
  if (a == b) return 0;
  return std::isnan(a) ? (std::isnan(b) ? 0 : -1) : 1;
}

}  // namespace

bool ColumnArith::Test(int index, const std::vector<const NumberColumn*>& columns,
                       const uint32_t* run, size_t n, std::vector<uint8_t>& mask) const {
  const Node& node = nodes_[index];
  Dense a, b;
  if (!Run(node.children[0], columns, run, n, a) || !Run(node.children[1], columns, run, n, b)) {
    return false;
  }
  std::vector<int> order(n);
  if (a.kind != Kind::kDouble && b.kind != Kind::kDouble) {
    for (size_t i = 0; i < n; ++i) order[i] = (a.ints[i] > b.ints[i]) - (a.ints[i] < b.ints[i]);
  } else {
    // An integer beside a double compares as a double only where that is exact.
    for (const Dense* d : {&a, &b}) {
      if (d->kind != Kind::kDouble && !std::all_of(d->ints.begin(), d->ints.end(), ExactAsDouble)) {
        return false;
      }
    }
    const double* x = a.AsDoubles();
    const double* y = b.AsDoubles();
    for (size_t i = 0; i < n; ++i) order[i] = CompareDoubles(x[i], y[i]);
  }
  mask.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const int c = order[i];
    switch (node.compare) {
      case Node::Compare::kEq:
        mask[i] = c == 0;
        break;
      case Node::Compare::kNe:
        mask[i] = c != 0;
        break;
      case Node::Compare::kGt:
        mask[i] = c > 0;
        break;
      case Node::Compare::kGte:
        mask[i] = c >= 0;
        break;
      case Node::Compare::kLt:
        mask[i] = c < 0;
        break;
      case Node::Compare::kLte:
        mask[i] = c <= 0;
        break;
    }
  }
  return true;
}

const double* ColumnArith::Dense::AsDoubles() {
  if (kind != Kind::kDouble && doubles.size() != ints.size()) {
    doubles.resize(ints.size());
    for (size_t i = 0; i < ints.size(); ++i) doubles[i] = static_cast<double>(ints[i]);
  }
  return doubles.data();
}

bool ColumnArith::Run(int index, const std::vector<const NumberColumn*>& columns,
                      const uint32_t* run, size_t n, Dense& dense) const {
  const Node& node = nodes_[index];
  switch (node.op) {
    case Node::Op::kField: {
      const NumberColumn& col = *columns[node.field];
      if (col.type == BsonType::kDouble) {
        dense.kind = Kind::kDouble;
        dense.doubles.resize(n);
        for (size_t i = 0; i < n; ++i) dense.doubles[i] = col.Double(run[i]);
      } else {
        dense.kind = col.type == BsonType::kInt32 ? Kind::kInt : Kind::kLong;
        dense.ints.resize(n);
        for (size_t i = 0; i < n; ++i) dense.ints[i] = col.Int(run[i]);
      }
      return true;
    }
    case Node::Op::kConstant:
      dense.kind = node.constant_kind;
      if (dense.kind == Kind::kDouble) {
        dense.doubles.assign(n, node.constant);
      } else {
        dense.ints.assign(n, node.int_constant);
      }
      return true;
    case Node::Op::kCompare:
      return false;  // a $cond's condition only (Test)
    case Node::Op::kCond: {
      std::vector<uint8_t> mask;
      Dense then, otherwise;
      if (!Test(node.children[0], columns, run, n, mask) ||
          !Run(node.children[1], columns, run, n, then) ||
          !Run(node.children[2], columns, run, n, otherwise)) {
        return false;
      }
      const bool all = std::all_of(mask.begin(), mask.end(), [](uint8_t m) { return m != 0; });
      const bool none = std::none_of(mask.begin(), mask.end(), [](uint8_t m) { return m != 0; });
      if (then.kind != otherwise.kind && !all && !none) return false;  // rows of two types
      if (all || none) {
        dense = std::move(all ? then : otherwise);
        return true;
      }
      dense.kind = then.kind;
      if (dense.kind == Kind::kDouble) {
        dense.doubles.resize(n);
        for (size_t i = 0; i < n; ++i) {
          dense.doubles[i] = mask[i] ? then.doubles[i] : otherwise.doubles[i];
        }
      } else {
        dense.ints.resize(n);
        for (size_t i = 0; i < n; ++i) dense.ints[i] = mask[i] ? then.ints[i] : otherwise.ints[i];
      }
      return true;
    }
    default:
      break;
  }
  std::vector<Dense> operands(node.children.size());
  Kind kind = Kind::kInt;
  for (size_t c = 0; c < node.children.size(); ++c) {
    if (!Run(node.children[c], columns, run, n, operands[c])) return false;
    kind = std::max(kind, operands[c].kind);
  }
  if (node.op == Node::Op::kDivide) kind = Kind::kDouble;
  dense.kind = kind;
  if (kind == Kind::kDouble) {
    std::vector<double>& out = dense.doubles;
    if (node.op == Node::Op::kSubtract || node.op == Node::Op::kDivide) {
      const double* a = operands[0].AsDoubles();
      const double* b = operands[1].AsDoubles();
      out.resize(n);
      if (node.op == Node::Op::kSubtract) {
        for (size_t i = 0; i < n; ++i) out[i] = a[i] - b[i];
        return true;
      }
      if (std::any_of(b, b + n, [](double d) { return d == 0; })) return false;
      for (size_t i = 0; i < n; ++i) out[i] = a[i] / b[i];
      return true;
    }
    const bool multiply = node.op == Node::Op::kMultiply;
    out.assign(n, multiply ? 1.0 : 0.0);
    for (Dense& operand : operands) {
      const double* v = operand.AsDoubles();
      if (multiply) {
        for (size_t i = 0; i < n; ++i) out[i] = out[i] * v[i];
      } else {
        for (size_t i = 0; i < n; ++i) out[i] = out[i] + v[i];
      }
    }
    return true;
  }
  // Exact integers, as the per-row path keeps them until one overflows.
  std::vector<int64_t>& out = dense.ints;
  bool overflow = false;
  if (node.op == Node::Op::kSubtract) {
    out.resize(n);
    for (size_t i = 0; i < n; ++i) {
      overflow |= __builtin_sub_overflow(operands[0].ints[i], operands[1].ints[i], &out[i]);
    }
  } else {
    const bool multiply = node.op == Node::Op::kMultiply;
    out.assign(n, multiply ? 1 : 0);
    for (const Dense& operand : operands) {
      for (size_t i = 0; i < n; ++i) {
        overflow |= multiply ? __builtin_mul_overflow(out[i], operand.ints[i], &out[i])
                             : __builtin_add_overflow(out[i], operand.ints[i], &out[i]);
      }
    }
  }
  if (overflow) return false;
  // Ints stay ints where the result fits; a run where some do not is left to the per-row path.
  if (kind == Kind::kInt) {
    return std::all_of(out.begin(), out.end(),
                       [](int64_t v) { return v >= INT32_MIN && v <= INT32_MAX; });
  }
  return true;
}

bool ColumnArith::Evaluate(const std::vector<const NumberColumn*>& columns, const uint32_t* run,
                           size_t n, uint64_t* out, BsonType* type) const {
  for (const NumberColumn* c : columns) {
    if (c == nullptr || c->present != nullptr) return false;
    if (c->type != BsonType::kDouble && c->type != BsonType::kInt32 &&
        c->type != BsonType::kInt64) {
      return false;
    }
  }
  Dense dense;
  if (!Run(root_, columns, run, n, dense)) return false;
  if (dense.kind == Kind::kDouble) {
    *type = BsonType::kDouble;
    for (size_t i = 0; i < n; ++i) out[run[i]] = std::bit_cast<uint64_t>(dense.doubles[i]);
  } else {
    *type = dense.kind == Kind::kInt ? BsonType::kInt32 : BsonType::kInt64;
    for (size_t i = 0; i < n; ++i) out[run[i]] = static_cast<uint64_t>(dense.ints[i]);
  }
  return true;
}

}  // namespace hourglass::pipeline
