// registry.cc's command table: sorted, each row's factory makes the command it names, and the
// registry finds every command by its name and its aliases.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "commands/auth_commands.h"
#include "commands/command.h"
#include "commands/command_factories.h"

namespace hourglass::commands {
namespace {

TEST(CommandTableTest, IsSortedByNameWithoutDuplicates) {
  auto table = CommandTable();
  ASSERT_FALSE(table.empty());
  for (size_t i = 1; i < table.size(); ++i) {
    EXPECT_LT(table[i - 1].name, table[i].name) << "row " << i;
  }
}

TEST(CommandTableTest, EachFactoryMakesTheCommandNamedOnItsRow) {
  for (const CommandTableEntry& entry : CommandTable()) {
    std::unique_ptr<Command> c = entry.make();
    ASSERT_NE(c, nullptr) << entry.name;
    EXPECT_EQ(c->Name(), entry.name);
  }
}

// With --auth every command is refused to everyone unless the authorization table lists it.
TEST(CommandTableTest, EveryCommandHasAnAuthorizationEntry) {
  for (const CommandTableEntry& entry : CommandTable()) {
    EXPECT_TRUE(CommandHasAuthorizationEntry(entry.name)) << entry.name;
  }
  EXPECT_FALSE(CommandHasAuthorizationEntry("noSuchCommand"));
  EXPECT_FALSE(CommandRequiresAuth("hello"));
  EXPECT_FALSE(CommandRequiresAuth("saslStart"));
  EXPECT_TRUE(CommandRequiresAuth("find"));
  EXPECT_TRUE(CommandRequiresAuth("logout"));
}

TEST(CommandTableTest, RegistryHoldsTheTableInItsOrder) {
  std::vector<std::string_view> table_names, registry_names;
  for (const CommandTableEntry& entry : CommandTable()) table_names.push_back(entry.name);
  for (const Command* c : CommandRegistry::Get().All()) registry_names.push_back(c->Name());
  EXPECT_EQ(registry_names, table_names);
}

TEST(CommandTableTest, FindsKnownCommandsAndAliases) {
  const CommandRegistry& registry = CommandRegistry::Get();
  for (std::string_view name : {"aggregate", "createIndexes", "find", "hello", "insert"}) {
    const Command* c = registry.Find(name);
    ASSERT_NE(c, nullptr) << name;
    EXPECT_EQ(c->Name(), name);
  }
  const Command* hello = registry.Find("hello");
  EXPECT_EQ(registry.Find("isMaster"), hello);
  EXPECT_EQ(registry.Find("ismaster"), hello);
  EXPECT_EQ(registry.Find("buildinfo"), registry.Find("buildInfo"));
  EXPECT_EQ(registry.Find("deleteIndexes"), registry.Find("dropIndexes"));
  EXPECT_EQ(registry.Find("noSuchCommand"), nullptr);
  // Names are case-sensitive: only declared aliases match another spelling.
  EXPECT_EQ(registry.Find("Find"), nullptr);
}

TEST(CommandTableTest, EveryAliasFindsItsOwnCommand) {
  const CommandRegistry& registry = CommandRegistry::Get();
  for (const Command* c : registry.All()) {
    EXPECT_EQ(registry.Find(c->Name()), c) << c->Name();
    for (std::string_view alias : c->Aliases()) {
      EXPECT_EQ(registry.Find(alias), c) << alias << " of " << c->Name();
    }
  }
}

}  // namespace
}  // namespace hourglass::commands
