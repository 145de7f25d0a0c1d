#include <algorithm>

#include "commands/command.h"

namespace hourglass::commands {

const CommandRegistry& CommandRegistry::Get() {
  static const CommandRegistry* registry = [] {
    auto* r = new CommandRegistry();
    // One line per command family, alphabetical; each family lists its commands in its own file.
    RegisterAdminCommands(*r);
    RegisterAggregateCommands(*r);
    RegisterCrudCommands(*r);
    RegisterDdlCommands(*r);
    std::sort(r->commands_.begin(), r->commands_.end(),
              [](const auto& a, const auto& b) { return a->Name() < b->Name(); });
    return r;
  }();
  return *registry;
}

void CommandRegistry::Add(std::unique_ptr<Command> c) { commands_.push_back(std::move(c)); }

const Command* CommandRegistry::Find(std::string_view name) const {
  for (const auto& c : commands_) {
    if (c->Name() == name) return c.get();
    for (auto a : c->Aliases()) {
      if (a == name) return c.get();
    }
  }
  return nullptr;
}

std::vector<const Command*> CommandRegistry::All() const {
  std::vector<const Command*> out;
  for (const auto& c : commands_) out.push_back(c.get());
  return out;
}

}  // namespace hourglass::commands
