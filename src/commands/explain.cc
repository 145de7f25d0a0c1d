#include "commands/explain.h"

#include "commands/command_factories.h"
#include "commands/command_util.h"
#include "commands/crud_util.h"
#include "commands/explain_request.h"
#include "commands/explain_timeseries.h"
#include "exec/explain.h"

namespace hourglass::commands {

using bson::BsonBuilder;
using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;

Status RunExplain(CommandContext& ctx, const BsonObj& inner, std::string_view verbosity,
                  BsonBuilder& reply) {
  if (verbosity != "queryPlanner" && verbosity != "executionStats" &&
      verbosity != "allPlansExecution") {
    return Status(ErrorCode::kBadValue,
                  "verbosity string must be one of {'queryPlanner', 'executionStats', "
                  "'allPlansExecution'}");
  }
  if (inner.IsEmpty())
    return Status(ErrorCode::kBadValue, "explain command requires a nested object");
  // A read of a view is explained as the aggregate it runs over what the view is defined on.
  HG_ASSIGN_OR_RETURN(auto over_view, ReadOverView(ctx, inner));
  if (over_view) return RunExplain(ctx, *over_view, verbosity, reply);
  HG_ASSIGN_OR_RETURN(auto over_rollup, AggregateOverRollup(ctx, inner));
  if (over_rollup) {
    HG_RETURN_IF_ERROR(RunExplain(ctx, over_rollup->cmd, verbosity, reply));
    reply.AppendObject("answeredFromRollup", over_rollup->note);
    return Status::OK();
  }
  HG_ASSIGN_OR_RETURN(bool timeseries, ExplainTimeseries(ctx, inner, verbosity, reply));
  if (timeseries) return Status::OK();
  HG_ASSIGN_OR_RETURN(exec::ExplainRequest req, ParseExplainRequest(ctx, inner, false));
  HG_RETURN_IF_ERROR(exec::ExplainCollectionRead(ctx.service.Read(), req, verbosity, reply));
  AppendExplainCommandAndServerInfo(ctx, inner, reply);
  return Status::OK();
}

namespace {

class ExplainCommand : public Command {
 public:
  std::string_view Name() const override { return "explain"; }
  Status Run(CommandContext& ctx, const BsonObj& cmd, BsonBuilder& reply) const override {
    HG_RETURN_IF_ERROR(CheckKnownFields(cmd, {"verbosity"}));
    BsonElement inner = cmd.FirstElement();
    if (inner.type() != BsonType::kObject) return WrongType("explain", inner, "object");
    HG_ASSIGN_OR_RETURN(auto verbosity, GetString("explain", cmd, "verbosity"));
    return RunExplain(ctx, inner.Obj(), verbosity.value_or("allPlansExecution"), reply);
  }
};

}  // namespace

std::unique_ptr<Command> MakeExplainCommand() { return std::make_unique<ExplainCommand>(); }

}  // namespace hourglass::commands
