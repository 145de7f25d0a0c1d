#include "commands/ddl_commands.h"

namespace hourglass::commands {

void RegisterDdlCommands(CommandRegistry& r) {
  RegisterDdlCreateCommands(r);
  RegisterDdlDropCommands(r);
  RegisterDdlIndexCommands(r);
  RegisterDdlListCommands(r);
  RegisterDdlStatsCommands(r);
}

}  // namespace hourglass::commands
