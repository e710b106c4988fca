// A decode step allocates nothing once the sequence has started: the backend's
// scratch, the transformer's activations, the cache and the sampler are all
// sized up front (counted by tests/support/counting_allocator.cpp).
#include <gtest/gtest.h>

#include <vector>

#include "tests/model/engine_test_util.h"
#include "tests/support/counting_allocator.h"

namespace tessera {
namespace {

using test::CountAllocations;
using testing::make_engine;

// Allocations during `steps` decode steps after the prompt's step.
long allocations_in_decode_steps(const std::string& extra_config, int steps) {
  auto engine = make_engine("stories260K.gguf", extra_config);
  if (!engine) return -1;
  SequenceState sequence;
  EXPECT_TRUE(engine->begin_sequence(sequence).ok());
  // The caller's buffers are the caller's business: reserved before counting.
  sequence.tokens.reserve(static_cast<std::size_t>(engine->max_tokens()));
  std::vector<int32_t> emitted;
  emitted.reserve(static_cast<std::size_t>(engine->max_tokens()));
  sequence.tokens = {engine->tokenizer().bos(), 403, 407};  // BOS "Once upon"-like prefix
  EXPECT_TRUE(engine->step(sequence, emitted).ok());        // prefill: may size buffers

  CountAllocations counter;
  for (int i = 0; i < steps; ++i) {
    const Status status = engine->step(sequence, emitted);
    if (!status.ok()) {
      ADD_FAILURE() << status.to_string();
      break;
    }
  }
  const long count = counter.count();
  EXPECT_EQ(emitted.size(), static_cast<std::size_t>(steps + 1));
  EXPECT_TRUE(engine->end_sequence(sequence).ok());
  return count;
}

TEST(DecodeNoAlloc, CounterSeesAllocations) {
  CountAllocations counter;
  std::vector<int> v(3);
  EXPECT_GE(counter.count(), 1);
}

TEST(DecodeNoAlloc, GreedyStepsAllocateNothing) {
  EXPECT_EQ(allocations_in_decode_steps("[backend]\nthreads = 2\n", 200), 0);
}

TEST(DecodeNoAlloc, SampledStepsAllocateNothing) {
  EXPECT_EQ(allocations_in_decode_steps(
                "[backend]\nthreads = 1\n[sampling]\ntemperature = 0.8\ntop_k = 40\n"
                "top_p = 0.9\nseed = 7\n",
                200),
            0);
}

}  // namespace
}  // namespace tessera
