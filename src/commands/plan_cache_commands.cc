// planCacheClear: drops a collection's plan cache entries (exec/plan_cache.h), or those of one
// query shape.
#include "catalog/namespace.h"
#include "commands/command.h"
#include "commands/command_factories.h"
#include "commands/command_util.h"
#include "commands/crud_util.h"
#include "exec/plan_cache.h"

namespace hourglass::commands {

using bson::BsonObj;
using exec::PlanCache;
using exec::QueryShape;

namespace {

// {planCacheClear: <collection>[, query, sort, projection]}: drops the collection's entries, or
// those of one query shape.
class PlanCacheClearCommand : public Command {
 public:
  std::string_view Name() const override { return "planCacheClear"; }
  Status Run(CommandContext& ctx, const BsonObj& cmd, bson::BsonBuilder&) const override {
    HG_RETURN_IF_ERROR(CheckKnownFields(cmd, {"query", "sort", "projection", "collation"}));
    HG_ASSIGN_OR_RETURN(std::string coll_name, GetCollectionName(cmd, ctx.db));
    catalog::NamespaceString nss{ctx.db, coll_name};
    HG_RETURN_IF_ERROR(catalog::ValidateCollectionName(nss));
    HG_ASSIGN_OR_RETURN(auto query, GetObject("planCacheClear", cmd, "query"));
    HG_ASSIGN_OR_RETURN(auto sort, GetObject("planCacheClear", cmd, "sort"));
    HG_ASSIGN_OR_RETURN(auto projection, GetObject("planCacheClear", cmd, "projection"));
    PlanCache& cache = PlanCache::Instance();
    if (!query) {
      if (sort || projection) {
        return Status(ErrorCode::kBadValue, "sort or projection provided without query");
      }
      cache.Clear(nss.ns());
      return Status::OK();
    }
    BsonObj s = sort.value_or(BsonObj()), p = projection.value_or(BsonObj());
    for (std::string_view extra : {"", "count"}) {
      cache.Erase(nss.ns(), QueryShape(*query, s, p, extra));
    }
    return Status::OK();
  }
};

}  // namespace

std::unique_ptr<Command> MakePlanCacheClearCommand() {
  return std::make_unique<PlanCacheClearCommand>();
}

}  // namespace hourglass::commands
