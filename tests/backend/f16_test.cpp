#include <gtest/gtest.h>

#include <bit>

#include "core/tensor/dtype.h"
#include "core/tensor/half.h"
#include "core/tensor/vector_lanes.h"

namespace tessera::cpu {
namespace {

// The kernels' inline conversion must agree with the core's, bit for bit.
TEST(F16, InlineConversionMatchesHalfToFloatForEveryInput) {
  for (uint32_t h = 0; h <= 0xffffu; ++h) {
    const auto half = static_cast<uint16_t>(h);
    ASSERT_EQ(std::bit_cast<uint32_t>(f16_to_f32(half)),
              std::bit_cast<uint32_t>(half_to_float(half)))
        << std::hex << h;
  }
}

// The four-lane conversion codecs use gives the same bits, lane by lane.
TEST(F16, LaneConversionMatchesHalfToFloatForEveryInput) {
  for (uint32_t h = 0; h <= 0xffffu; h += 4) {
    const UintLanes halves = {h, h + 1, h + 2, h + 3};
    const FloatLanes floats = f16_to_f32_lanes(halves);
    for (int lane = 0; lane < 4; ++lane)
      ASSERT_EQ(std::bit_cast<uint32_t>(floats[lane]),
                std::bit_cast<uint32_t>(half_to_float(static_cast<uint16_t>(h + lane))))
          << std::hex << h + lane;
  }
}

}  // namespace
}  // namespace tessera::cpu
