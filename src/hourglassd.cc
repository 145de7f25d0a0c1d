#include "server/server.h"

int main(int argc, char** argv) { return hourglass::server::RunServer(argc, argv); }
