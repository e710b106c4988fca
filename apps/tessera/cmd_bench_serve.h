// tessera bench --serve: tessera serve under concurrent sessions, beside
// llama-server -np N, and the time to first token on a long history (the
// options are bench's; cmd_bench.cpp parses them and hands over).
#pragma once

#include "apps/tessera/cli_common.h"

namespace tessera::cli {

// What `bench --help` adds about --serve.
extern const char* const kServeBenchHelp;

int run_bench_serve(const po::variables_map& values);

}  // namespace tessera::cli
