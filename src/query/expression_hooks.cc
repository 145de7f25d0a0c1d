#include "query/expression_hooks.h"

#include <chrono>
#include <string>

namespace hourglass::query {

namespace {
// Constant-initialized, so hooks installed from other static initializers are never lost.
constinit ExpressionHooks g_hooks{};
}  // namespace

ExpressionContext ExpressionContext::Now() {
  auto now = std::chrono::system_clock::now().time_since_epoch();
  return ExpressionContext{std::chrono::duration_cast<std::chrono::milliseconds>(now).count(),
                           nullptr, nullptr};
}

void SetExpressionHooks(const ExpressionHooks& hooks) { g_hooks = hooks; }

const ExpressionHooks& GetExpressionHooks() { return g_hooks; }

Status MissingExpressionHook(std::string_view feature) {
  return Status(ErrorCode::kCommandNotSupported,
                std::string(feature) +
                    " needs the aggregation expression language, which is "
                    "not linked into this program");
}

}  // namespace hourglass::query
