#include "backends/cpu/thread_pool.h"

#include <algorithm>
#include <cstdint>
#include <new>
#include <thread>

#include "core/status/status.h"

namespace tessera::cpu {

ThreadPool::ThreadPool(int threads)
    : threads_(threads), scratch_(static_cast<std::size_t>(std::max(threads, 1))) {
  TESSERA_CHECK(threads >= 1, "ThreadPool needs at least one thread");
  workers_.reserve(static_cast<std::size_t>(threads - 1));
  for (int t = 1; t < threads; ++t) workers_.emplace_back([this, t] { worker_loop(t); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_.store(true);
  }
  wake_.notify_all();
  for (std::thread& w : workers_) w.join();
}

bool ThreadPool::reserve_scratch(std::size_t floats) {
  if (floats <= scratch_floats_) return true;
  // Grow geometrically so a slowly lengthening context reallocates rarely.
  const std::size_t size = std::max(floats, scratch_floats_ + scratch_floats_ / 2);
  if (size > SIZE_MAX / sizeof(float)) return false;
  std::vector<std::unique_ptr<float[]>> grown(scratch_.size());
  for (auto& s : grown) {
    s.reset(new (std::nothrow) float[size]);
    if (!s) return false;
  }
  scratch_ = std::move(grown);
  scratch_floats_ = size;
  return true;
}

void* ThreadPool::shared_scratch(std::size_t bytes) {
  if (bytes > shared_bytes_) {
    const std::size_t size = std::max(bytes, shared_bytes_ + shared_bytes_ / 2);
    std::unique_ptr<std::byte[]> grown(new (std::nothrow) std::byte[size]);
    if (!grown) return nullptr;
    shared_ = std::move(grown);
    shared_bytes_ = size;
  }
  return shared_.get();
}

void ThreadPool::run_chunk(const Job& job, int chunk, int thread) {
  // Chunk c covers [begin + len*c/chunks, begin + len*(c+1)/chunks).
  const int64_t len = job.end - job.begin;
  const int64_t b = job.begin + len * chunk / job.chunks;
  const int64_t e = job.begin + len * (chunk + 1) / job.chunks;
  if (b < e) job.fn.call(job.fn.ctx, b, e, thread);
}

void ThreadPool::take_chunks(const Job& job, int thread) {
  for (int chunk = next_chunk_.fetch_add(1, std::memory_order_relaxed); chunk < job.chunks;
       chunk = next_chunk_.fetch_add(1, std::memory_order_relaxed))
    run_chunk(job, chunk, thread);
}

namespace {

// A short pause inside spin loops: lets the sibling hyper-thread run and
// saves power; a plain no-op where there is no such instruction.
inline void spin_pause() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

}  // namespace

void ThreadPool::run(int64_t begin, int64_t end, int64_t min_chunk, ChunkFn fn) {
  const int64_t len = end - begin;
  if (len <= 0) return;
  const int64_t by_size =
      (len + std::max<int64_t>(min_chunk, 1) - 1) / std::max<int64_t>(min_chunk, 1);
  const int chunks = static_cast<int>(
      std::min<int64_t>(threads_ == 1 ? 1 : int64_t{threads_} * kChunksPerThread, by_size));

  std::lock_guard<std::mutex> dispatch(dispatch_mutex_);
  Job job{fn, begin, end, chunks};
  if (chunks == 1) {
    run_chunk(job, 0, 0);
    return;
  }
  // Publish the job, then the new generation: a worker that sees the
  // generation (acquire) sees the job. Spinning workers start at once;
  // sleeping ones are woken under the mutex, so none misses the change.
  // Every worker checks in, needed or not, so none is still reading job_
  // when the next dispatch overwrites it.
  job_ = job;
  next_chunk_.store(0);
  pending_.store(threads_ - 1);
  generation_.fetch_add(1);
  if (sleepers_.load() > 0) {
    { std::lock_guard<std::mutex> lock(mutex_); }
    wake_.notify_all();
  }
  take_chunks(job, 0);
  // The last chunks are running now: wait for them briefly by spinning,
  // then by giving the core away (a shared core may be running them).
  for (int spins = 0; pending_.load() != 0; ++spins) {
    if (spins < kSpinsBeforeYield) {
      spin_pause();
    } else {
      std::this_thread::yield();
    }
  }
}

void ThreadPool::worker_loop(int thread) {
  uint64_t seen = 0;
  for (;;) {
    // Between the ops of one forward the next job comes within microseconds:
    // spin for it first, then sleep until woken.
    uint64_t now = generation_.load();
    for (int spins = 0; now == seen && !stop_.load() && spins < kSpinsBeforeSleep; ++spins) {
      spin_pause();
      now = generation_.load();
    }
    if (now == seen) {
      std::unique_lock<std::mutex> lock(mutex_);
      sleepers_.fetch_add(1);
      wake_.wait(lock, [&] { return stop_.load() || generation_.load() != seen; });
      sleepers_.fetch_sub(1);
      now = generation_.load();
    }
    if (stop_.load()) return;
    seen = now;
    const Job job = job_;
    take_chunks(job, thread);
    pending_.fetch_sub(1);
  }
}

}  // namespace tessera::cpu
