// tessera_backend_conformance: every op of kAllBackendOps x dtype x odd
// shapes on each backend under test, against an in-process CpuBackend.
//   tessera_backend_conformance [--backend=NAME[,NAME]] [gtest flags]
// Without --backend: TESSERA_CONFORMANCE_BACKENDS, else every backend plugin
// found (TESSERA_PLUGIN_PATH, next to the executable, the build tree).
#include <gtest/gtest.h>

#include <cctype>
#include <cstdio>
#include <string>

#include "core/backend/backend.h"
#include "tests/backend/conformance/backends_under_test.h"
#include "tests/backend/conformance/fixture.h"
#include "tests/backend/conformance/summary.h"

namespace tessera::conformance {
namespace {

// The test's name suffix: the backend's name, with anything gtest does not
// take in a name made '_'.
std::string instance_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string name = info.param;
  for (char& ch : name)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return name;
}

INSTANTIATE_TEST_SUITE_P(Ops, Conformance, ::testing::ValuesIn(selected_backends()), instance_name);

}  // namespace
}  // namespace tessera::conformance

int main(int argc, char** argv) {
  const auto names = tessera::conformance::select_backends(argc, argv);
  if (names.empty()) {
    std::fprintf(stderr,
                 "tessera_backend_conformance: no backend to test (no --backend=NAME, no "
                 "TESSERA_CONFORMANCE_BACKENDS, and no backend plugin found)\n");
    return 1;
  }
  ::testing::InitGoogleTest(&argc, argv);
  int rc = RUN_ALL_TESTS();
  tessera::conformance::print_summary(stdout);
  // Unfiltered, every op x dtype must have been run or reported unsupported:
  // an op added to kAllBackendOps needs its cases here.
  if (rc == 0 && ::testing::GTEST_FLAG(filter) == "*") {
    for (const std::string& missing : tessera::conformance::unrecorded(names)) {
      std::fprintf(stderr, "tessera_backend_conformance: no case ran for %s\n", missing.c_str());
      rc = 1;
    }
  }
  tessera::conformance::release_backends();
  return rc;
}
