// Helpers shared by the benchmark programs that talk to a server through libmongoc (ts_bench,
// tsbs_queries, index_bench, wire_bench), with those of bench_args.h.
#pragma once

#include <mongoc/mongoc.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "bench_args.h"

namespace hourglass::bench {

// Runs `cmd` on `db`; prints the error unless `quiet`. `reply` may be null.
inline bool RunCommand(mongoc_client_t* client, const char* db, bson_t* cmd,
                       bson_t* reply = nullptr, bool quiet = false) {
  bson_error_t err;
  bson_t local;
  bool ok = mongoc_client_command_simple(client, db, cmd, nullptr, reply ? reply : &local, &err);
  if (!ok && !quiet) std::fprintf(stderr, "command failed: %s\n", err.message);
  if (reply == nullptr) bson_destroy(&local);
  return ok;
}

// Calls mongoc_init and parses `uri`; nullptr (with a message) for a bad one. The caller
// destroys the URI and calls mongoc_cleanup.
inline mongoc_uri_t* OpenUri(const std::string& uri) {
  mongoc_init();
  bson_error_t err;
  mongoc_uri_t* parsed = mongoc_uri_new_with_error(uri.c_str(), &err);
  if (parsed == nullptr) std::fprintf(stderr, "bad URI: %s\n", err.message);
  return parsed;
}

}  // namespace hourglass::bench
