// hourglassd's life: parse options, take the dbpath lock, open storage and the catalog, listen,
// serve until SIGINT/SIGTERM or the shutdown command, then close everything cleanly (final
// checkpoint) and release the lock. Returns the process exit code.
#pragma once

namespace hourglass::server {

int RunServer(int argc, char** argv);

}  // namespace hourglass::server
