// The CPU backend's own copy of the weights (backend.weights = "copied"):
// one anonymous mapping, huge pages asked for, each distinct tensor copied
// once to a cache-line-aligned offset and the tensors repointed at it.
//
// Why copy at all: on the virtual machines measured here, reading weights
// from a file mapping (page-cache pages, 4 KiB each) ran generation at about
// half the speed of the same bytes in anonymous memory; llama.cpp shows the
// same with --no-mmap (docs/performance.md). Once the engine drops the file
// mapping the weights are resident once, in the copy; the file's page-cache
// pages are clean and the kernel reclaims them when it needs the memory.
#pragma once

#include <cstddef>
#include <functional>
#include <span>
#include <unordered_set>

#include "backends/cpu/thread_pool.h"
#include "core/status/status.h"
#include "core/tensor/tensor.h"

namespace tessera::cpu {

class WeightArena {
 public:
  WeightArena() = default;
  ~WeightArena();
  WeightArena(const WeightArena&) = delete;
  WeightArena& operator=(const WeightArena&) = delete;

  // The bytes the distinct tensors of `weights` take, aligned as copy() lays
  // them out.
  static std::size_t bytes_needed(std::span<Tensor* const> weights);

  // Copies every tensor (contiguous, as loaded) into a new mapping, in
  // pieces spread over the pool's threads (first touch of fresh pages is most
  // of the cost), and repoints it; tensors sharing data keep sharing.
  // Matrices of whole groups of rows of a type `interleave` accepts (if set)
  // are written interleaved (interleaved_rows.h) on the way, at no extra
  // memory.
  // ResourceExhausted when the memory cannot be had (the tensors are left as
  // they were).
  Status copy(std::span<Tensor* const> weights, ThreadPool& pool,
              const std::function<bool(DType)>& interleave = {});

  std::size_t size() const { return size_; }
  // Whether the tensor at `data` (in the arena) was written interleaved.
  bool interleaved(const void* data) const { return interleaved_.contains(data); }

 private:
  void* base_ = nullptr;
  std::size_t size_ = 0;
  std::unordered_set<const void*> interleaved_;
};

}  // namespace tessera::cpu
