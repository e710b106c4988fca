// The memory a config asks for is checked before anything is allocated. A
// huge cache.max_tokens used to end in an uncaught bad_alloc (the CPU backend
// sized its scratch from it first), and a merely large one zeroed gigabytes
// before failing.
#include "core/engine/memory_budget.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/model/engine_test_util.h"
#include "tests/support/counting_allocator.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;

// stories260K: 5 layers, 4 kv heads, head size 8; identity stores 32 bytes a vector.
MemoryRequest stories_request(int64_t max_tokens) {
  MemoryRequest r;
  r.max_tokens = max_tokens;
  r.geometry = {5, 4, 8};
  r.bytes_per_vector = 32;
  r.weight_bytes = 1 << 20;
  r.codec_name = "identity";
  return r;
}

constexpr uint64_t kGiB = uint64_t{1} << 30;

TEST(MemoryBudget, KvBytesFollowTheGeometry) {
  EXPECT_EQ(kv_cache_bytes(stories_request(1000)), 1000.0 * 5 * 2 * 4 * 32);
}

// Layers kept apart in a window store count their entries, not max_tokens.
TEST(MemoryBudget, SlidingLayersCountTheirWindow) {
  MemoryRequest r = stories_request(1000);
  r.sliding_layers = 3;
  r.sliding_entries = 100;
  EXPECT_EQ(kv_cache_bytes(r), (1000.0 * 2 + 100.0 * 3) * 2 * 4 * 32);
  r.sliding_entries = 5000;  // never more than max_tokens
  EXPECT_EQ(kv_cache_bytes(r), 1000.0 * 5 * 2 * 4 * 32);
}

TEST(MemoryBudget, MoreThanTheMachineHasIsRefusedWithTheLargestThatFits) {
  const Status status =
      check_memory_budget(stories_request(2147483647), AvailableMemory{kGiB, "test memory"});
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.code(), StatusCode::kResourceExhausted);
  EXPECT_THAT(status.message(), HasSubstr("cache.max_tokens = 2147483647 asks for 2621440 MiB"));
  EXPECT_THAT(status.message(), HasSubstr("5 layers x 2 (K, V) x 4 kv heads x 32 bytes per vector "
                                          "with codec 'identity'"));
  EXPECT_THAT(status.message(),
              HasSubstr("more than the 1024 MiB of memory available (test memory)"));
  // (1 GiB - 1 MiB of weights) / 1280 bytes a token.
  EXPECT_THAT(status.message(), HasSubstr("lower cache.max_tokens to 838041 or less"));
  EXPECT_TRUE(check_memory_budget(stories_request(838041), AvailableMemory{kGiB, "t"}).ok());
  EXPECT_FALSE(check_memory_budget(stories_request(838042), AvailableMemory{kGiB, "t"}).ok());
}

TEST(MemoryBudget, TheExplicitCapComesFirst) {
  MemoryRequest r = stories_request(4096);  // 5 MiB
  r.cap_bytes = 1 << 20;
  const Status status = check_memory_budget(r, AvailableMemory{64 * kGiB, "t"});
  ASSERT_FALSE(status.ok());
  EXPECT_THAT(status.message(), HasSubstr("more than cache.max_memory_mib = 1 MiB"));
  EXPECT_THAT(status.message(), HasSubstr("lower cache.max_tokens to 819 or less"));
  r.max_tokens = 819;
  EXPECT_TRUE(check_memory_budget(r, AvailableMemory{64 * kGiB, "t"}).ok());
}

TEST(MemoryBudget, UnknownMachineMemorySkipsOnlyThatCheck) {
  EXPECT_TRUE(check_memory_budget(stories_request(2147483647), AvailableMemory{0, "unknown"}).ok());
  MemoryRequest capped = stories_request(2147483647);
  capped.cap_bytes = kGiB;
  EXPECT_FALSE(check_memory_budget(capped, AvailableMemory{0, "unknown"}).ok());
}

TEST(MemoryBudget, TheMachineReportsSomething) {
  const AvailableMemory available = available_memory();
  EXPECT_TRUE(available.known());
  EXPECT_GT(available.bytes, 0u);
}

// The engine refuses before it allocates: no request anywhere near the size
// asked for reaches the allocator.
TEST(MemoryBudget, TheEngineRefusesBeforeAllocating) {
  for (const std::string& extra :
       {std::string("[cache]\nmax_tokens = 2147483647\n"),
        std::string("[cache]\nmax_tokens = 100000\nmax_memory_mib = 1\n")}) {
    SCOPED_TRACE(extra);
    test::CountAllocations counting;
    auto engine = support::shared_model_engine("stories260K.gguf", extra);
    ASSERT_FALSE(engine.ok());
    EXPECT_EQ(engine.status().code(), StatusCode::kResourceExhausted);
    EXPECT_THAT(engine.status().message(), HasSubstr("lower cache.max_tokens to"));
    EXPECT_LT(counting.largest(), std::size_t{64} << 20);
  }
}

// Weights a device holds are checked against its free memory, not the host's.
TEST(MemoryBudget, WeightsOnADeviceAreCheckedAgainstItsMemory) {
  MemoryRequest r = stories_request(1000);
  r.weight_bytes = 3 * kGiB;
  EXPECT_FALSE(check_memory_budget(r, AvailableMemory{2 * kGiB, "t"}).ok());
  r.weights_on_device = true;
  r.device_name = "a test GPU";
  r.device_free_bytes = 4 * kGiB;
  EXPECT_TRUE(check_memory_budget(r, AvailableMemory{2 * kGiB, "t"}).ok());
  r.device_free_bytes = 2 * kGiB;
  const Status refused = check_memory_budget(r, AvailableMemory{64 * kGiB, "t"});
  EXPECT_EQ(refused.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(refused.message().find("3072 MiB of weights do not fit the 2048 MiB of memory "
                                   "free on a test GPU"),
            std::string::npos)
      << refused.message();
}

// K/V a device holds (a store that took the backend) count against the
// device's free memory with the weights, and no longer against the host's.
TEST(MemoryBudget, KvOnADeviceIsCheckedAgainstItsMemory) {
  MemoryRequest r = stories_request(1'000'000);  // 1.6e9 bytes of K/V
  r.weight_bytes = kGiB;
  r.weights_on_device = true;
  r.device_name = "a test GPU";
  r.device_free_bytes = 4 * kGiB;
  EXPECT_FALSE(check_memory_budget(r, AvailableMemory{kGiB, "t"}).ok()) << "K/V on the host";
  r.kv_on_device = true;
  EXPECT_TRUE(check_memory_budget(r, AvailableMemory{kGiB, "t"}).ok());
  r.device_free_bytes = 2 * kGiB;
  const Status refused = check_memory_budget(r, AvailableMemory{64 * kGiB, "t"});
  EXPECT_EQ(refused.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(refused.message().find("in the memory of a test GPU; with the model's 1024 MiB of "
                                   "weights that is more than its 2048 MiB free; lower "
                                   "cache.max_tokens to"),
            std::string::npos)
      << refused.message();
}

}  // namespace
}  // namespace tessera
