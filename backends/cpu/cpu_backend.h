// The reference backend: the Backend op set on the host, split over a thread
// pool (backends/cpu/cpu_kernels.h has the kernels and their guarantees).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backends/cpu/rope_table.h"
#include "backends/cpu/thread_pool.h"
#include "backends/cpu/weight_arena.h"
#include "core/backend/backend.h"
#include "core/plugin/options.h"

namespace tessera {

class CpuBackend final : public Backend {
 public:
  CpuBackend() = default;
  // The plugin entry point; the cpu backend declares no options (threads come
  // through init()).
  explicit CpuBackend(const OptionValues& options);

  // threads >= 1 (the caller plus threads - 1 workers). May be called again to
  // change the thread count.
  Status init(const BackendOptions& options) override;
  DeviceInfo device_info() const override;
  bool supports_weight_dtype(DType dtype) const override;
  // 64-byte aligned host memory, uninitialised, whatever the usage.
  using Backend::allocate;
  Result<std::unique_ptr<Buffer>> allocate(std::size_t bytes, BufferUsage usage) override;

  void embedding(const Tensor& table, std::span<const int32_t> tokens, const Tensor& out) override;
  void matmul(const Tensor& x, const Tensor& w, const Tensor& out) override;
  void rms_norm(const Tensor& x, const Tensor& weight, float eps, const Tensor& out) override;
  using Backend::rope;  // the llama overload (theta only)
  void rope(const Tensor& x, std::span<const int32_t> positions, const RopeSpec& rope) override;
  void swiglu(const Tensor& gate, const Tensor& up, const Tensor& out) override;
  void add(const Tensor& a, const Tensor& b, const Tensor& out) override;
  void add_bias(const Tensor& x, const Tensor& bias, const Tensor& out) override;
  void geglu(const Tensor& gate, const Tensor& up, const Tensor& out) override;
  void scale(const Tensor& x, float factor, const Tensor& out) override;
  void attention(const AttentionParams& params) override;
  void masked_attention(const MaskedAttentionParams& params) override;
  void cache_update(const Tensor& cache, const Tensor& keep, const Tensor& insert,
                    const Tensor& rows) override;
  // backend.weights: "copied" copies them (WeightArena); "mapped" leaves them
  // in place; "auto" copies when they take at most half the available memory.
  Result<std::size_t> adopt_weights(std::span<Tensor* const> weights) override;

  // The pool, for callers that run kernels directly; null before init().
  cpu::ThreadPool* pool() const { return pool_.get(); }

 private:
  // RoPE's angles for this head size and rotation, cached for the first
  // rope_positions_ positions (the rope op and keys rotated at read time).
  const cpu::RopeTable& rope_table(int64_t head_dim, const RopeSpec& rope);

  std::unique_ptr<cpu::ThreadPool> pool_;
  // One per head size and rotation in use (a draft model may differ from the
  // target; gemma3's local and global layers differ).
  std::vector<std::unique_ptr<cpu::RopeTable>> ropes_;
  int64_t rope_positions_ = 0;
  int64_t max_context_ = 0;
  std::string weights_ = "auto";
  // One per model whose weights were handed over (a draft model adds one).
  std::vector<std::unique_ptr<cpu::WeightArena>> arenas_;
  bool interleaved(const void* data) const;
};

}  // namespace tessera
