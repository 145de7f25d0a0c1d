#include "base/server_parameters.h"

#include <charconv>
#include <cmath>

namespace hourglass {

ServerParameter::ServerParameter(std::string name, ParameterValue default_value, bool startup,
                                 bool runtime, Validator validator)
    : name_(std::move(name)),
      startup_(startup),
      runtime_(runtime),
      validator_(std::move(validator)),
      value_(std::move(default_value)),
      as_int_(AsInt(value_)) {}

ParameterValue ServerParameter::Get() const {
  std::lock_guard<std::mutex> lk(mu_);
  return value_;
}

int64_t ServerParameter::AsInt(const ParameterValue& v) {
  if (auto* i = std::get_if<int32_t>(&v)) return *i;
  if (auto* l = std::get_if<int64_t>(&v)) return *l;
  if (auto* d = std::get_if<double>(&v)) return static_cast<int64_t>(*d);
  if (auto* b = std::get_if<bool>(&v)) return *b ? 1 : 0;
  return 0;
}

int64_t ServerParameter::GetInt() const { return as_int_.load(std::memory_order_relaxed); }

double ServerParameter::GetDouble() const {
  ParameterValue v = Get();
  if (auto* d = std::get_if<double>(&v)) return *d;
  return static_cast<double>(GetInt());
}

bool ServerParameter::GetBool() const { return GetInt() != 0; }

std::string ServerParameter::GetString() const {
  ParameterValue v = Get();
  if (auto* s = std::get_if<std::string>(&v)) return *s;
  return {};
}

namespace {
// Converts `in` to the type held by `like`, or fails.
StatusWith<ParameterValue> ConvertTo(const ParameterValue& like, const ParameterValue& in,
                                     const std::string& name) {
  auto bad = [&] { return Status(ErrorCode::kBadValue, "Invalid value for parameter " + name); };
  double num = 0;
  bool is_num = true;
  if (auto* i = std::get_if<int32_t>(&in))
    num = *i;
  else if (auto* l = std::get_if<int64_t>(&in))
    num = static_cast<double>(*l);
  else if (auto* d = std::get_if<double>(&in))
    num = *d;
  else if (auto* b = std::get_if<bool>(&in))
    num = *b ? 1 : 0;
  else
    is_num = false;
  if (std::holds_alternative<std::string>(like)) {
    if (auto* s = std::get_if<std::string>(&in)) return ParameterValue(*s);
    return bad();
  }
  if (!is_num) return bad();
  if (std::holds_alternative<bool>(like)) return ParameterValue(num != 0);
  if (std::holds_alternative<double>(like)) return ParameterValue(num);
  if (std::floor(num) != num) return bad();
  if (std::holds_alternative<int32_t>(like)) {
    if (num < INT32_MIN || num > INT32_MAX) return bad();
    return ParameterValue(static_cast<int32_t>(num));
  }
  if (auto* l = std::get_if<int64_t>(&in)) return ParameterValue(*l);
  return ParameterValue(static_cast<int64_t>(num));
}
}  // namespace

Status ServerParameter::Set(const ParameterValue& v) {
  ParameterValue current = Get();
  auto converted = ConvertTo(current, v, name_);
  if (!converted.ok()) return converted.status();
  if (validator_) HG_RETURN_IF_ERROR(validator_(converted.value()));
  std::lock_guard<std::mutex> lk(mu_);
  value_ = std::move(converted).value();
  as_int_.store(AsInt(value_), std::memory_order_relaxed);
  return Status::OK();
}

Status ServerParameter::SetFromString(std::string_view text) {
  ParameterValue current = Get();
  if (std::holds_alternative<std::string>(current)) return Set(std::string(text));
  if (std::holds_alternative<bool>(current)) {
    if (text == "true" || text == "1") return Set(true);
    if (text == "false" || text == "0") return Set(false);
    return Status(ErrorCode::kBadValue,
                  "Invalid value for parameter " + name_ + ": " + std::string(text));
  }
  if (std::holds_alternative<double>(current)) {
    std::string s(text);
    char* end = nullptr;
    double d = std::strtod(s.c_str(), &end);
    if (s.empty() || *end != '\0') {
      return Status(ErrorCode::kBadValue, "Invalid value for parameter " + name_ + ": " + s);
    }
    return Set(d);
  }
  int64_t v = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || ptr != text.data() + text.size()) {
    return Status(ErrorCode::kBadValue,
                  "Invalid value for parameter " + name_ + ": " + std::string(text));
  }
  return Set(v);
}

ServerParameterRegistry& ServerParameterRegistry::Get() {
  static ServerParameterRegistry* r = new ServerParameterRegistry();
  return *r;
}

ServerParameter* ServerParameterRegistry::Register(std::string name, ParameterValue default_value,
                                                   bool startup, bool runtime,
                                                   ServerParameter::Validator validator) {
  std::lock_guard<std::mutex> lk(mu_);
  auto it = params_.find(name);
  if (it != params_.end()) return it->second.get();
  auto p = std::make_unique<ServerParameter>(name, std::move(default_value), startup, runtime,
                                             std::move(validator));
  ServerParameter* raw = p.get();
  params_.emplace(std::move(name), std::move(p));
  return raw;
}

ServerParameter* ServerParameterRegistry::Find(std::string_view name) const {
  std::lock_guard<std::mutex> lk(mu_);
  auto it = params_.find(name);
  return it == params_.end() ? nullptr : it->second.get();
}

std::vector<ServerParameter*> ServerParameterRegistry::All() const {
  std::lock_guard<std::mutex> lk(mu_);
  std::vector<ServerParameter*> out;
  for (auto& [k, v] : params_) out.push_back(v.get());
  return out;
}

ServerParameter* RegisterEnableTestCommands() {
  static ServerParameter* p =
      ServerParameterRegistry::Get().Register("enableTestCommands", false, true, false);
  return p;
}

bool TestCommandsEnabled() { return RegisterEnableTestCommands()->GetBool(); }

}  // namespace hourglass
