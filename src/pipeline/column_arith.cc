#include "pipeline/column_arith.h"

#include <algorithm>

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
      const std::string_view s = e.Str();
      if (s.size() < 2 || s[0] != '$' || s[1] == '$' || s.find('.') != std::string_view::npos) {
        return -1;
      }
      const std::string name(s.substr(1));
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
      } else {
        return -1;
      }
      if (op.type() != BsonType::kArray) return -1;
      for (const BsonElement& arg : op.Obj()) {
        bool child_reads = false;
        const int child = Add(arg, &child_reads);
        // A child without a field could be an integer result (or a date): left to the per-row
        // path, whose promotion rules it would need.
        if (child < 0 || (!child_reads && nodes_[child].op != Node::Op::kConstant)) return -1;
        node.children.push_back(child);
        *reads_field = *reads_field || child_reads;
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

bool ColumnArith::Run(int index, const std::vector<const NumberColumn*>& columns,
                      const uint32_t* run, size_t n, double* dense) const {
  const Node& node = nodes_[index];
  switch (node.op) {
    case Node::Op::kField: {
      const NumberColumn& col = *columns[node.field];
      for (size_t i = 0; i < n; ++i) dense[i] = col.Double(run[i]);
      return true;
    }
    case Node::Op::kConstant:
      std::fill(dense, dense + n, node.constant);
      return true;
    default:
      break;
  }
  std::vector<double> operand(n);
  if (node.op == Node::Op::kSubtract || node.op == Node::Op::kDivide) {
    if (!Run(node.children[0], columns, run, n, dense) ||
        !Run(node.children[1], columns, run, n, operand.data())) {
      return false;
    }
    if (node.op == Node::Op::kSubtract) {
      for (size_t i = 0; i < n; ++i) dense[i] = dense[i] - operand[i];
      return true;
    }
    if (std::any_of(operand.begin(), operand.end(), [](double d) { return d == 0; })) return false;
    for (size_t i = 0; i < n; ++i) dense[i] = dense[i] / operand[i];
    return true;
  }
  const bool multiply = node.op == Node::Op::kMultiply;
  std::fill(dense, dense + n, multiply ? 1.0 : 0.0);
  for (int child : node.children) {
    if (!Run(child, columns, run, n, operand.data())) return false;
    if (multiply) {
      for (size_t i = 0; i < n; ++i) dense[i] = dense[i] * operand[i];
    } else {
      for (size_t i = 0; i < n; ++i) dense[i] = dense[i] + operand[i];
    }
  }
  return true;
}

bool ColumnArith::Evaluate(const std::vector<const NumberColumn*>& columns, const uint32_t* run,
                           size_t n, double* out) const {
  for (const NumberColumn* c : columns) {
    if (c == nullptr || c->type != BsonType::kDouble || c->present != nullptr) return false;
  }
  std::vector<double> dense(n);
  if (!Run(root_, columns, run, n, dense.data())) return false;
  for (size_t i = 0; i < n; ++i) out[run[i]] = dense[i];
  return true;
}

}  // namespace hourglass::pipeline
