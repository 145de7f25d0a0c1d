#include "exec/plan_summary.h"

#include "base/interrupt.h"

namespace hourglass::exec {

std::string PlanSummary(std::string_view stage, const bson::BsonObj& key_pattern) {
  std::string out(stage);
  if (key_pattern.IsEmpty()) return out;
  // The shell's notation MongoDB prints: names bare, numbers as they are, strings quoted.
  out += " { ";
  bool first = true;
  for (const bson::BsonElement& e : key_pattern) {
    if (!first) out += ", ";
    first = false;
    out += std::string(e.FieldName()) + ": ";
    if (e.type() == bson::BsonType::kString) {
      out += "\"" + std::string(e.Str()) + "\"";
    } else if (e.IsNumber()) {
      const double d = e.NumberDouble();
      out += d == static_cast<double>(static_cast<int64_t>(d)) ? std::to_string(e.NumberLong())
                                                               : std::to_string(d);
    } else {
      // Other values as Extended JSON: {"k" : <value>} without the braces and the name.
      bson::BsonBuilder one;
      one.AppendElement(e);
      const std::string json = one.Obj().ToJson();
      const size_t colon = json.find(" : ");
      out += colon == std::string::npos ? json : json.substr(colon + 3, json.size() - colon - 5);
    }
  }
  return out + " }";
}

void RecordPlanSummary(std::string summary) {
  if (const auto& op = OperationControl::Current()) op->SetPlanSummary(std::move(summary));
}

}  // namespace hourglass::exec
