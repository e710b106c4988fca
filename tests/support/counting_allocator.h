// Counts calls to the global operator new while a CountAllocations is alive.
// A test binary gets the counting operator new by linking
// tests/support/counting_allocator.cpp (see TESSERA_TEST_EXTRA_SOURCES_<area>
// in tests/CMakeLists.txt). The replacement is process-wide, so it also counts
// allocations inside libtessera_core.so and loaded plugins.
#pragma once

#include <cstddef>

namespace tessera::test {

class CountAllocations {
 public:
  CountAllocations();
  ~CountAllocations();
  CountAllocations(const CountAllocations&) = delete;
  CountAllocations& operator=(const CountAllocations&) = delete;

  long count() const;
  // The largest single request, in bytes (the plain, array and nothrow forms).
  std::size_t largest() const;
};

}  // namespace tessera::test
