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
    RegisterExplainCommand(*r);
    std::sort(r->commands_.begin(), r->commands_.end(),
              [](const auto& a, const auto& b) { return a->Name() < b->Name(); });
    for (const auto& c : r->commands_) {
      r->by_name_.emplace(std::string(c->Name()), c.get());
      for (auto alias : c->Aliases()) r->by_name_.emplace(std::string(alias), c.get());
    }
    return r;
  }();
  return *registry;
}

void CommandRegistry::Add(std::unique_ptr<Command> c) { commands_.push_back(std::move(c)); }

const Command* CommandRegistry::Find(std::string_view name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : it->second;
}

std::vector<const Command*> CommandRegistry::All() const {
  std::vector<const Command*> out;
  for (const auto& c : commands_) out.push_back(c.get());
  return out;
}

}  // namespace hourglass::commands
