// tessera bench --spec: speculative decoding against plain decoding of the
// same target, measured in one run (the options are bench's; cmd_bench.cpp
// parses them and hands over).
#pragma once

#include "apps/tessera/cli_common.h"

namespace tessera::cli {

// What `bench --help` adds about --spec: the columns and the formulas.
extern const char* const kSpecBenchHelp;

int run_bench_spec(const po::variables_map& values);

}  // namespace tessera::cli
