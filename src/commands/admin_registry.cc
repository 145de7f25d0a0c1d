#include "commands/admin_commands.h"

namespace hourglass::commands {

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
