#include "base/generic_arguments.h"

namespace hourglass {

bool IsGenericArgument(std::string_view f) {
  static constexpr std::string_view kGeneric[] = {"$db",
                                                  "lsid",
                                                  "txnNumber",
                                                  "$clusterTime",
                                                  "$readPreference",
                                                  "readPreference",
                                                  "apiVersion",
                                                  "apiStrict",
                                                  "apiDeprecationErrors",
                                                  "comment",
                                                  "maxTimeMS",
                                                  "writeConcern",
                                                  "readConcern",
                                                  "autocommit",
                                                  "startTransaction",
                                                  "coordinator",
                                                  "$audit",
                                                  "$client",
                                                  "$configServerState",
                                                  "$gleStats",
                                                  "$oplogQueryData",
                                                  "$replData",
                                                  "$topologyTime",
                                                  "$configTime",
                                                  "mayBypassWriteConcern",
                                                  "databaseVersion",
                                                  "shardVersion",
                                                  "tracking_info",
                                                  "clientOperationKey",
                                                  "$queryOptions",
                                                  "$traceCtx",
                                                  "allowImplicitCollectionCreation",
                                                  "versionContext",
                                                  "rawData"};
  for (auto g : kGeneric) {
    if (g == f) return true;
  }
  return false;
}

}  // namespace hourglass
