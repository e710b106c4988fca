// Which backends the conformance suite runs, and the backends themselves:
// plugins found by name through the plugin registry (TESSERA_PLUGIN_PATH,
// next to the executable, the build tree), each created once with its
// default options and init with threads = 1, shared by every test. The
// reference is an in-process CpuBackend, never a plugin.
#pragma once

#include <string>
#include <vector>

#include "core/backend/backend.h"
#include "core/status/status.h"

namespace tessera::conformance {

// The names to test: --backend=NAME[,NAME] from the command line (removed
// from argv), else TESSERA_CONFORMANCE_BACKENDS (','-separated), else every
// backend plugin the registry finds. Call once, before InitGoogleTest.
std::vector<std::string> select_backends(int& argc, char** argv);

// The names select_backends chose (the tests' parameters).
const std::vector<std::string>& selected_backends();

// The backend under test called `name`, created on first use; an error says
// why it cannot be had (no such plugin, refused options, init failed) and is
// returned again on every later call.
Result<Backend*> backend_under_test(const std::string& name);

// The reference: a CpuBackend in this process, threads = 1.
Backend& reference_backend();

// Destroys every backend created (before the plugins' libraries go away).
void release_backends();

}  // namespace tessera::conformance
