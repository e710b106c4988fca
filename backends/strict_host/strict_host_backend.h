// A backend for tests only (docs/backends.md, "How the contract is tested
// without a GPU"): the CPU's kernels on memory the host may not touch. Its
// buffers are host memory that reports host_data() null, so every tensor in
// them has a null `data`, as on a device. An op takes only tensors in its
// own buffers (a host tensor where a device one belongs is an error
// synchronize() returns, as on the Vulkan backend), and the host reaches the
// bytes only through write / read / copy. Whatever above the backend reads
// device memory directly faults at once (a null `data`), on every CI run,
// under the sanitizers too, with no GPU and no Vulkan.
#pragma once

#include <memory>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "core/backend/backend.h"
#include "core/plugin/options.h"

namespace tessera {

class StrictHostBackend final : public Backend {
 public:
  explicit StrictHostBackend(const OptionValues& options);

  Status init(const BackendOptions& options) override;
  DeviceInfo device_info() const override;
  bool supports_weight_dtype(DType dtype) const override;
  using Backend::allocate;
  // Host memory that says it is not (host_data() null).
  Result<std::unique_ptr<Buffer>> allocate(std::size_t bytes, BufferUsage usage) override;
  Status write(const Tensor& dst, std::span<const std::byte> bytes) override;
  Status read(const Tensor& src, std::span<std::byte> bytes) override;
  Status copy(const Tensor& src, const Tensor& dst) override;
  // The first op error since the last call (ops run as called).
  Status synchronize() override;

  void embedding(const Tensor& table, std::span<const int32_t> tokens, const Tensor& out) override;
  void matmul(const Tensor& x, const Tensor& w, const Tensor& out) override;
  void rms_norm(const Tensor& x, const Tensor& weight, float eps, const Tensor& out) override;
  using Backend::rope;
  void rope(const Tensor& x, std::span<const int32_t> positions, const RopeSpec& rope) override;
  void swiglu(const Tensor& gate, const Tensor& up, const Tensor& out) override;
  void add(const Tensor& a, const Tensor& b, const Tensor& out) override;
  void add_bias(const Tensor& x, const Tensor& bias, const Tensor& out) override;
  void geglu(const Tensor& gate, const Tensor& up, const Tensor& out) override;
  void scale(const Tensor& x, float factor, const Tensor& out) override;
  // Stored segments may be host memory (a store that keeps host K/V,
  // restoration's transient K/V) or this backend's.
  void attention(const AttentionParams& params) override;
  void masked_attention(const MaskedAttentionParams& params) override;
  void cache_update(const Tensor& cache, const Tensor& keep, const Tensor& insert,
                    const Tensor& rows) override;
  // Copies every weight into this backend's memory (tensors that share data
  // stay shared) and repoints them: data null, buffer + offset.
  Result<std::size_t> adopt_weights(std::span<Tensor* const> weights) override;

 private:
  // The host view of one of this backend's tensors, or the error that it
  // is not one (kept for synchronize()).
  bool unwrap(const char* op, const Tensor& t, Tensor& host);
  // A stored segment's host view: its own memory's, or as given on the host.
  bool unwrap_segment(const KVSegment& segment, KVSegment& host);

  CpuBackend cpu_;
  Status error_;
  std::vector<std::unique_ptr<Buffer>> weights_;
  // attention(): the views with their segments unwrapped.
  std::vector<std::vector<KVSegment>> segments_;
  std::vector<KVView> views_;
};

}  // namespace tessera
