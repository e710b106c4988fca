#include "backends/cpu/cpu_backend.h"

#include <algorithm>
#include <new>
#include <string>

#include "backends/cpu/cpu_kernels.h"
#include "backends/cpu/dot_kernels.h"
#include "core/util/system_memory.h"

namespace tessera {
namespace {

constexpr std::size_t kAlignment = 64;  // a cache line; enough for any SIMD load
constexpr int kMaxThreads = 1024;
// Past this many positions RoPE angles are computed when needed, not tabled.
constexpr int64_t kRopeTablePositions = 1 << 16;

class HostBuffer final : public Buffer {
 public:
  HostBuffer(void* data, std::size_t size, BufferUsage usage)
      : data_(data), size_(size), usage_(usage) {}
  ~HostBuffer() override { ::operator delete (data_, std::align_val_t{kAlignment}); }
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;

  void* host_data() override { return data_; }
  std::size_t size() const override { return size_; }
  BufferUsage usage() const override { return usage_; }

 private:
  void* data_;
  std::size_t size_;
  BufferUsage usage_;
};

}  // namespace

CpuBackend::CpuBackend(const OptionValues& /*options*/) {}

Status CpuBackend::init(const BackendOptions& options) {
  if (options.threads < 1 || options.threads > kMaxThreads) {
    return invalid_argument("backend cpu: threads = " + std::to_string(options.threads) +
                            " is out of range; set [backend] threads to a value from 1 to " +
                            std::to_string(kMaxThreads) + " (usually the number of cores)");
  }
  pool_.reset();  // join the old workers before starting new ones
  pool_ = std::make_unique<cpu::ThreadPool>(options.threads);
  max_context_ = options.max_context;
  if (options.weights != "auto" && options.weights != "mapped" && options.weights != "copied")
    return invalid_argument("backend cpu: weights = \"" + options.weights +
                            "\" is not one of auto, mapped, copied");
  weights_ = options.weights;
  // Cached RoPE angles for the first positions (keys rotated at read time).
  rope_positions_ =
      std::min<int64_t>(options.max_context > 0 ? options.max_context : 4096, kRopeTablePositions);
  // Attention scores for the longest context, so decoding never grows scratch.
  if (options.max_context > 0 &&
      !pool_->reserve_scratch(static_cast<std::size_t>(options.max_context)))
    return resource_exhausted("backend cpu: cannot allocate " + std::to_string(options.threads) +
                              " x " + std::to_string(options.max_context) +
                              " floats of attention scratch; lower cache.max_tokens");
  return ok_status();
}

Result<std::size_t> CpuBackend::adopt_weights(std::span<Tensor* const> weights) {
  if (weights_ == "mapped") return std::size_t{0};
  if (weights_ == "auto") {
    const AvailableMemory available = available_memory();
    if (!available.known() || cpu::WeightArena::bytes_needed(weights) > available.bytes / 2)
      return std::size_t{0};
  }
  // Integer weights interleaved for the kernels that read them so.
  auto arena = std::make_unique<cpu::WeightArena>();
  RETURN_IF_ERROR(arena->copy(weights, *pool_, [](DType dtype) {
    return cpu::reads_interleaved(cpu::best_dot_kernels(), dtype);
  }));
  const std::size_t bytes = arena->size();
  arenas_.push_back(std::move(arena));
  return bytes;
}

bool CpuBackend::interleaved(const void* data) const {
  for (const auto& arena : arenas_)
    if (arena->interleaved(data)) return true;
  return false;
}

DeviceInfo CpuBackend::device_info() const {
  const int threads = pool_ ? pool_->threads() : 0;
  DeviceInfo info;
  info.threads = threads;
  info.name = "cpu (" + std::to_string(threads) + (threads == 1 ? " thread)" : " threads)");
  info.description =
      "reference CPU backend: f32, f16, bf16, q8_0, q4_0, q4_K and q6_K weights, each "
      "output summed in one fixed order (bitwise identical for any thread count or "
      "batch size), output columns split over threads";
  return info;
}

bool CpuBackend::supports_weight_dtype(DType dtype) const {
  for (const DType known : kAllDTypes)
    if (dtype == known) return true;
  return false;
}

Result<std::unique_ptr<Buffer>> CpuBackend::allocate(std::size_t bytes, BufferUsage usage) {
  // Round up so vector code may read a whole last cache line; never zero bytes.
  const std::size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  void* data = ::operator new (rounded == 0 ? kAlignment : rounded, std::align_val_t{kAlignment},
                               std::nothrow);
  if (data == nullptr) {
    return resource_exhausted("backend cpu: cannot allocate " + std::to_string(bytes) +
                              " bytes of host memory for " + std::string(buffer_usage_name(usage)) +
                              "; use a smaller model, context or batch");
  }
  return std::unique_ptr<Buffer>(std::make_unique<HostBuffer>(data, bytes, usage));
}

void CpuBackend::embedding(const Tensor& table, std::span<const int32_t> tokens,
                           const Tensor& out) {
  cpu::embedding(table, tokens, out, pool_.get(), interleaved(table.data));
}

void CpuBackend::matmul(const Tensor& x, const Tensor& w, const Tensor& out) {
  cpu::matmul(x, w, out, pool_.get(), interleaved(w.data));
}

void CpuBackend::rms_norm(const Tensor& x, const Tensor& weight, float eps, const Tensor& out) {
  cpu::rms_norm(x, weight, eps, out, pool_.get());
}

void CpuBackend::rope(const Tensor& x, std::span<const int32_t> positions, const RopeSpec& rope) {
  cpu::rope(x, positions, rope_table(x.dim(2), rope), pool_.get());
}

void CpuBackend::swiglu(const Tensor& gate, const Tensor& up, const Tensor& out) {
  cpu::swiglu(gate, up, out, pool_.get());
}

void CpuBackend::add(const Tensor& a, const Tensor& b, const Tensor& out) {
  cpu::add(a, b, out, pool_.get());
}

void CpuBackend::add_bias(const Tensor& x, const Tensor& bias, const Tensor& out) {
  cpu::add_bias(x, bias, out, pool_.get());
}

void CpuBackend::geglu(const Tensor& gate, const Tensor& up, const Tensor& out) {
  cpu::geglu(gate, up, out, pool_.get());
}

void CpuBackend::scale(const Tensor& x, float factor, const Tensor& out) {
  cpu::scale(x, factor, out, pool_.get());
}

void CpuBackend::attention(const AttentionParams& params) {
  // Keys read before RoPE, and sinks moved under reassign, rotate at read
  // time; the table is built once (the first such call) for this model.
  static const cpu::RopeTable kUnused;  // attention reads no table then
  const bool rotates = params.stored_keys == StoredKeys::kBeforeRope || params.rule.reassign;
  cpu::attention(params, rotates ? rope_table(params.q.dim(2), params.rope) : kUnused, pool_.get(),
                 max_context_);
}

void CpuBackend::masked_attention(const MaskedAttentionParams& params) {
  cpu::masked_attention(params, pool_.get());
}

void CpuBackend::cache_update(const Tensor& cache, const Tensor& keep, const Tensor& insert,
                              const Tensor& rows) {
  cpu::cache_update(cache, keep, insert, rows);
}

const cpu::RopeTable& CpuBackend::rope_table(int64_t head_dim, const RopeSpec& rope) {
  cpu::RopeTable* table = nullptr;
  for (const auto& known : ropes_)
    if (known->is_for(head_dim, rope)) table = known.get();
  if (table == nullptr) {
    ropes_.push_back(std::make_unique<cpu::RopeTable>());
    table = ropes_.back().get();
  }
  if (!table->prepare(head_dim, rope, rope_positions_)) {
    rope_positions_ = 0;  // no memory for the table: every angle is computed
    table->prepare(head_dim, rope, 0);
  }
  return *table;
}

}  // namespace tessera
