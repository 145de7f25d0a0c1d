// The registry of server parameters (MongoDB's setParameter/getParameter knobs). Each parameter has
// a name, a type, a default, whether it may be set at startup (--setParameter name=value) and/or at
// runtime (the setParameter command), and an optional validator. Modules register their parameters
// once at startup through RegisterServerParameters-style functions; reads are thread-safe and
// cheap.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "base/status.h"

namespace hourglass {

using ParameterValue = std::variant<bool, int32_t, int64_t, double, std::string>;

class ServerParameter {
 public:
  using Validator = std::function<Status(const ParameterValue&)>;
  ServerParameter(std::string name, ParameterValue default_value, bool startup, bool runtime,
                  Validator validator = {});

  const std::string& name() const { return name_; }
  bool settable_at_startup() const { return startup_; }
  bool settable_at_runtime() const { return runtime_; }
  ParameterValue Get() const;
  int64_t GetInt() const;
  double GetDouble() const;
  bool GetBool() const;
  std::string GetString() const;

  // Converts `v` to the parameter's type (numbers across int/long/double when exact; bools from
  // numbers) and sets it. BadValue on a type that cannot convert or a validator failure.
  Status Set(const ParameterValue& v);
  // Parses the text of --setParameter name=value.
  Status SetFromString(std::string_view text);

 private:
  std::string name_;
  bool startup_;
  bool runtime_;
  Validator validator_;
  static int64_t AsInt(const ParameterValue& v);

  mutable std::mutex mu_;
  ParameterValue value_;  // guarded by mu_
  // The value as GetInt/GetBool answer it, kept beside value_ so that the hot paths reading
  // numeric knobs (the bucket catalog reads several per measurement) take no lock.
  std::atomic<int64_t> as_int_;
};

class ServerParameterRegistry {
 public:
  static ServerParameterRegistry& Get();
  // Registers a parameter (name must be new) and returns it; the registry owns it for the process.
  ServerParameter* Register(std::string name, ParameterValue default_value, bool startup = true,
                            bool runtime = true, ServerParameter::Validator validator = {});
  // nullptr if unknown.
  ServerParameter* Find(std::string_view name) const;
  std::vector<ServerParameter*> All() const;

 private:
  mutable std::mutex mu_;
  std::map<std::string, std::unique_ptr<ServerParameter>, std::less<>> params_;
};

// enableTestCommands (bool, default false, startup only): MongoDB's switch for its test-only
// commands (configureFailPoint, waitForFailPoint). Registered by the first call of either
// function; the server calls RegisterEnableTestCommands before it applies --setParameter.
ServerParameter* RegisterEnableTestCommands();
// Its value: one relaxed atomic load once registered.
bool TestCommandsEnabled();

}  // namespace hourglass
