#include "backends/cpu/thread_pool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace tessera::cpu {
namespace {

// Every index is visited exactly once, in contiguous chunks whose
// boundaries depend on the range and thread count only, never on which
// thread took which chunk.
TEST(ThreadPool, CoversTheRangeOnceInAFixedGridOfChunks) {
  for (int threads : {1, 2, 3, 5}) {
    ThreadPool pool(threads);
    for (int64_t len : {0, 1, 2, 3, 7, 64, 1001}) {
      std::vector<std::vector<std::pair<int64_t, int64_t>>> grids;
      for (int round = 0; round < 3; ++round) {
        std::vector<int> hits(static_cast<std::size_t>(len), 0);
        std::mutex chunks_mutex;
        std::vector<std::pair<int64_t, int64_t>> chunks;
        pool.parallel_for(10, 10 + len, [&](int64_t b, int64_t e, int thread) {
          EXPECT_LT(b, e);
          EXPECT_GE(thread, 0);
          EXPECT_LT(thread, threads);
          for (int64_t i = b; i < e; ++i) ++hits[static_cast<std::size_t>(i - 10)];
          std::lock_guard<std::mutex> lock(chunks_mutex);
          chunks.emplace_back(b, e);
        });
        for (int h : hits) EXPECT_EQ(h, 1) << threads << " threads, length " << len;
        EXPECT_LE(chunks.size(), static_cast<std::size_t>(threads * ThreadPool::kChunksPerThread));
        if (threads == 1) {
          EXPECT_LE(chunks.size(), 1u);
        }
        std::sort(chunks.begin(), chunks.end());
        grids.push_back(std::move(chunks));
      }
      EXPECT_EQ(grids[0], grids[1]) << threads << " threads, length " << len;
      EXPECT_EQ(grids[0], grids[2]) << threads << " threads, length " << len;
    }
  }
}

// A thread held up (as by a busy neighbour on a shared host) does not hold
// the call up: the free thread takes every chunk the held one has not.
TEST(ThreadPool, AFreeThreadTakesTheChunksOfAHeldOne) {
  ThreadPool pool(2);
  const int chunks = 2 * ThreadPool::kChunksPerThread;
  std::atomic<int> done{0};
  std::atomic<int> by_caller{0};
  pool.parallel_for(0, chunks, [&](int64_t b, int64_t e, int thread) {
    if (thread == 1) {
      // Held until the caller has done every other chunk (or 10 s passed).
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      while (done.load() < chunks - 1 && std::chrono::steady_clock::now() < deadline)
        std::this_thread::yield();
    } else {
      by_caller += static_cast<int>(e - b);
    }
    done += static_cast<int>(e - b);
  });
  EXPECT_EQ(done.load(), chunks);
  EXPECT_GE(by_caller.load(), chunks - 1);
}

TEST(ThreadPool, SmallRangesStayOnTheCallingThread) {
  ThreadPool pool(4);
  int calls = 0;  // not atomic: only the caller may touch it
  pool.parallel_for(
      0, 100,
      [&](int64_t b, int64_t e, int thread) {
        ++calls;
        EXPECT_EQ(thread, 0);
        EXPECT_EQ(b, 0);
        EXPECT_EQ(e, 100);
      },
      1000);
  EXPECT_EQ(calls, 1);
}

TEST(ThreadPool, ManyDispatchesInARow) {
  ThreadPool pool(3);
  std::vector<int64_t> sums(3, 0);
  int64_t total = 0;
  for (int round = 0; round < 2000; ++round) {
    pool.parallel_for(0, 30, [&](int64_t b, int64_t e, int thread) {
      for (int64_t i = b; i < e; ++i) sums[static_cast<std::size_t>(thread)] += i;
    });
    total += 435;
  }
  EXPECT_EQ(sums[0] + sums[1] + sums[2], total);
}

TEST(ThreadPool, ScratchGrowsOnlyWhenAskedForMore) {
  ThreadPool pool(2);
  ASSERT_TRUE(pool.reserve_scratch(100));
  EXPECT_GE(pool.scratch_size(), 100u);
  float* before = pool.scratch(1);
  ASSERT_TRUE(pool.reserve_scratch(50));
  EXPECT_EQ(pool.scratch(1), before);
  ASSERT_TRUE(pool.reserve_scratch(pool.scratch_size()));
  EXPECT_EQ(pool.scratch(1), before);
  ASSERT_TRUE(pool.reserve_scratch(1000));
  EXPECT_GE(pool.scratch_size(), 1000u);
  // Each thread writes its own scratch without disturbing the other (either
  // may take both chunks).
  pool.scratch(0)[999] = 0.0f;
  pool.scratch(1)[999] = 1.0f;
  for (int round = 0; round < 100; ++round) {
    pool.parallel_for(0, 2, [&](int64_t, int64_t, int thread) {
      for (int i = 0; i < 1000; ++i) pool.scratch(thread)[i] = static_cast<float>(thread);
    });
    EXPECT_EQ(pool.scratch(0)[999], 0.0f);
    EXPECT_EQ(pool.scratch(1)[999], 1.0f);
  }
}

// A size past what size_t can count in bytes is refused, and the old scratch
// stays usable.
TEST(ThreadPool, ScratchTooLargeIsRefusedNotThrown) {
  ThreadPool pool(2);
  ASSERT_TRUE(pool.reserve_scratch(64));
  float* before = pool.scratch(0);
  EXPECT_FALSE(pool.reserve_scratch(SIZE_MAX / 2));
  EXPECT_EQ(pool.scratch(0), before);
  EXPECT_EQ(pool.scratch_size(), 64u);
}

}  // namespace
}  // namespace tessera::cpu
