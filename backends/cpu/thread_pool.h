// A fixed set of worker threads that split an index range into contiguous
// chunks. Each index is handled by exactly one thread, so a kernel that
// computes every output element from its own index alone gives bitwise the
// same result for any thread count.
//
// The chunks are a fixed grid (a few per thread, from the range, the thread
// count and the minimum chunk alone) handed out one at a time to whichever
// thread is free: on a shared host one core often runs slower than the
// other, and equal halves left the fast one waiting for the slow one. Which
// thread takes a chunk varies from call to call; where the chunk boundaries
// lie does not.
//
// Dispatch never allocates: the callable is passed by reference (a function
// ref, not std::function). Idle workers spin on an atomic generation counter
// for a short while (the next op of a forward comes within microseconds),
// then sleep on a condition variable, so a pool left idle costs nothing and
// shared cores are not held; the dispatcher waits for the other chunks by
// spinning briefly, then yielding.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <type_traits>
#include <vector>

namespace tessera::cpu {

class ThreadPool {
 public:
  // threads >= 1: the calling thread runs chunk 0, threads - 1 workers the rest.
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int threads() const { return threads_; }

  // Enough chunks that a thread slowed by its neighbours on the host leaves
  // its share to the others, few enough that taking one stays negligible.
  static constexpr int kChunksPerThread = 4;

  // Calls fn(chunk_begin, chunk_end, thread) on contiguous, disjoint chunks
  // covering [begin, end) (at most kChunksPerThread * threads() of them),
  // and returns when all are done. Chunks hold at least min_chunk indices
  // (except when the range is smaller), so tiny ranges stay on the calling
  // thread. `thread` is the thread running the chunk, in [0, threads()), and
  // selects that thread's scratch; one thread may run several chunks, one
  // after the other. fn must not throw and must not call parallel_for on
  // this pool. Calls from several threads are serialised.
  template <typename Fn>
  void parallel_for(int64_t begin, int64_t end, Fn&& fn, int64_t min_chunk = 1) {
    using F = std::remove_reference_t<Fn>;
    const ChunkFn ref{
        const_cast<void*>(static_cast<const void*>(std::addressof(fn))),
        [](void* ctx, int64_t b, int64_t e, int thread) { (*static_cast<F*>(ctx))(b, e, thread); }};
    run(begin, end, min_chunk, ref);
  }

  // Per-thread f32 scratch. Grows every thread's scratch to at least `floats`
  // (allocating only when a larger size than ever before is asked for); call
  // it on the dispatching thread before parallel_for. The memory is left
  // uninitialised (untouched until used). False, with the old scratch kept,
  // when the memory cannot be had.
  [[nodiscard]] bool reserve_scratch(std::size_t floats);
  // Scratch of `thread`, valid until the next reserve_scratch that grows it.
  float* scratch(int thread) { return scratch_[static_cast<std::size_t>(thread)].get(); }
  std::size_t scratch_size() const { return scratch_floats_; }

  // One buffer every thread may read (e.g. activations quantized once for
  // all the threads' rows), grown like the scratch: call on the dispatching
  // thread before parallel_for. Null when the memory cannot be had.
  void* shared_scratch(std::size_t bytes);

 private:
  struct ChunkFn {
    void* ctx;
    void (*call)(void* ctx, int64_t begin, int64_t end, int thread);
  };
  struct Job {
    ChunkFn fn{nullptr, nullptr};
    int64_t begin = 0;
    int64_t end = 0;
    int chunks = 0;
  };

  void run(int64_t begin, int64_t end, int64_t min_chunk, ChunkFn fn);
  static void run_chunk(const Job& job, int chunk, int thread);
  // Takes chunks of job_ until none is left.
  void take_chunks(const Job& job, int thread);
  void worker_loop(int thread);

  const int threads_;
  std::vector<std::thread> workers_;
  std::vector<std::unique_ptr<float[]>> scratch_;
  std::size_t scratch_floats_ = 0;
  std::unique_ptr<std::byte[]> shared_;
  std::size_t shared_bytes_ = 0;

  // About 50 to 100 microseconds of spinning before a worker sleeps, a few
  // before the dispatcher yields.
  static constexpr int kSpinsBeforeSleep = 20000;
  static constexpr int kSpinsBeforeYield = 2000;

  std::mutex dispatch_mutex_;  // one parallel_for at a time
  std::mutex mutex_;           // for sleeping workers
  std::condition_variable wake_;
  Job job_;  // written before generation_ is bumped
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> next_chunk_{0};  // the current job's next chunk to hand out
  std::atomic<int> pending_{0};     // workers that have not finished the current job
  std::atomic<int> sleepers_{0};    // workers waiting on wake_
  std::atomic<bool> stop_{false};
};

}  // namespace tessera::cpu
