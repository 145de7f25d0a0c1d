#include <chrono>

#include "commands/admin_commands.h"

namespace hourglass::commands {

int64_t NowMillis() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void RegisterAdminCommands(CommandRegistry& r) {
  RegisterBasicServerParameters();
  RegisterHelloCommands(r);
  RegisterInfoCommands(r);
  RegisterOpsCommands(r);
  RegisterParameterCommands(r);
  RegisterServerStatusCommand(r);
  RegisterSessionCommands(r);
}

}  // namespace hourglass::commands
