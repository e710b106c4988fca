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

// Allocations during `steps` decode steps after `warm_up` steps (the prompt's
// first: buffers may be sized then).
long allocations_in_decode_steps(const std::string& extra_config, int steps, int warm_up = 1,
                                 const std::string& model = "stories260K.gguf") {
  auto engine = make_engine(model, extra_config);
  if (!engine) return -1;
  SequenceState sequence;
  EXPECT_TRUE(engine->begin_sequence(sequence).ok());
  // The caller's buffers are the caller's business: reserved before counting.
  sequence.tokens.reserve(static_cast<std::size_t>(engine->max_tokens()));
  std::vector<int32_t> emitted;
  emitted.reserve(static_cast<std::size_t>(engine->max_tokens()));
  sequence.tokens = {engine->tokenizer().bos(), 403, 407};  // BOS "Once upon"-like prefix
  for (int i = 0; i < warm_up; ++i)
    EXPECT_TRUE(engine->step(sequence, emitted).ok());  // prefill: may size buffers
  const std::size_t warm = emitted.size();

  CountAllocations counter;
  for (int i = 0; i < steps; ++i) {
    const Status status = engine->step(sequence, emitted);
    if (!status.ok()) {
      ADD_FAILURE() << status.to_string();
      break;
    }
  }
  const long count = counter.count();
  // A step emits one token, or more when a draft was accepted.
  EXPECT_GE(emitted.size() - warm, static_cast<std::size_t>(steps));
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

// Speculative steps: drafting, one verification forward, acceptance and the
// commit of the accepted path reuse their buffers too.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kSanitizedBuild = true;
#else
constexpr bool kSanitizedBuild = false;
#endif

TEST(DecodeNoAlloc, SpeculativeStepsAllocateNothing) {
  const std::string sampled = "[sampling]\ntemperature = 0.8\ntop_k = 40\ntop_p = 0.9\nseed = 7\n";
  for (const std::string decode :
       {"proposer = \"ngram\"\n", "proposer = \"self_draft\"\n",
        "proposer = \"ar_draft\"\ndraft_model = \"stories260K.gguf\"\n",
        "proposer = \"tree\"\ntree_drafter = \"ar_draft\"\ndraft_model = \"stories260K.gguf\"\n",
        "proposer = \"dlm\"\ndraft_model = \"tok512-sdar-1m.gguf\"\ndenoise_passes = 2\n",
        "proposer = \"dlm\"\ndraft_model = \"tok512-sdar-1m.gguf\"\ndraft_tokens = 8\n"
        "denoise_blocks = \"in_order\"\n",
        "proposer = \"tree\"\ntree_drafter = \"dlm\"\ndraft_model = \"tok512-sdar-1m.gguf\"\n"})
    for (const std::string& sampling : {std::string(), sampled}) {
      // The sanitizer build (several times slower) checks the sampled path on
      // the chain proposers but dlm; the release build checks every pair.
      if (kSanitizedBuild && !sampling.empty() &&
          (decode.find("dlm") != std::string::npos || decode.find("tree") != std::string::npos))
        continue;
      EXPECT_EQ(
          allocations_in_decode_steps(sampling + "[decode]\n" + decode, 40, 8, "tok512-ar-1m.gguf"),
          0)
          << decode << sampling;
    }
}

// Restored steps past the window: the restorer's chunked forward over the
// history, the transient K/V and the lifted window reuse scratch reserved for
// cache.max_tokens positions, with the target or another model restoring
// (the other model's first transient K/V come after the warm-up).
TEST(DecodeNoAlloc, RestoredStepsAllocateNothing) {
  const std::string config =
      "[cache]\nplugin = \"sink_window\"\nsink = 4\nwindow = 16\nmax_tokens = 128\n"
      "codec_stage = \"pre_rope\"\n[decode]\nverifier = \"restored\"\nrestore_chunk = 16\n";
  EXPECT_EQ(
      allocations_in_decode_steps(config + "restorer = \"self\"\n", 40, 30, "tok512-ar-1m.gguf"),
      0);
  EXPECT_EQ(allocations_in_decode_steps(
                config + "restorer = \"model\"\nrestorer_model = \"tok512-sdar-1m.gguf\"\n", 40, 30,
                "tok512-ar-1m.gguf"),
            0);
}

}  // namespace
}  // namespace tessera
