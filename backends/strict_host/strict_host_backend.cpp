#include "backends/strict_host/strict_host_backend.h"

#include <cstring>
#include <map>
#include <string>

namespace tessera {
namespace {

// Host memory with host_data() null: only this backend finds the address.
class StrictBuffer final : public Buffer {
 public:
  explicit StrictBuffer(std::unique_ptr<Buffer> memory) : memory_(std::move(memory)) {}
  std::size_t size() const override { return memory_->size(); }
  BufferUsage usage() const override { return memory_->usage(); }
  void* host_data() override { return nullptr; }
  std::byte* address() const { return static_cast<std::byte*>(memory_->host_data()); }

 private:
  std::unique_ptr<Buffer> memory_;
};

// The same tensor at its host address (buffer cleared: the CPU's kernels see
// plain host memory).
Tensor at_address(const Tensor& t, const StrictBuffer& buffer) {
  Tensor host = t;
  host.data = buffer.address() + t.offset;
  host.buffer = nullptr;
  host.offset = 0;
  return host;
}

}  // namespace

StrictHostBackend::StrictHostBackend(const OptionValues& /*options*/) {}

Status StrictHostBackend::init(const BackendOptions& options) {
  BackendOptions cpu = options;
  cpu.weights = "mapped";  // adopt_weights copies them into strict memory itself
  return cpu_.init(cpu);
}

DeviceInfo StrictHostBackend::device_info() const {
  DeviceInfo info = cpu_.device_info();
  info.name = "strict host (" + info.name + ")";
  info.description = "tests only: the cpu kernels on memory that reports host_data() null";
  info.kind = "strict_host";
  info.type = "cpu";
  info.host_memory = false;
  return info;
}

bool StrictHostBackend::supports_weight_dtype(DType dtype) const {
  return cpu_.supports_weight_dtype(dtype);
}

Result<std::unique_ptr<Buffer>> StrictHostBackend::allocate(std::size_t bytes, BufferUsage usage) {
  ASSIGN_OR_RETURN(std::unique_ptr<Buffer> memory, cpu_.allocate(bytes, usage));
  return std::unique_ptr<Buffer>(std::make_unique<StrictBuffer>(std::move(memory)));
}

bool StrictHostBackend::unwrap(const char* op, const Tensor& t, Tensor& host) {
  const auto* buffer = dynamic_cast<const StrictBuffer*>(t.buffer);
  if (t.data == nullptr && buffer != nullptr) {
    host = at_address(t, *buffer);
    return true;
  }
  if (error_.ok())
    error_ = invalid_argument(
        std::string("backend strict_host: ") + op + ": a " + t.describe() +
        (t.data != nullptr ? " tensor in host memory" : " tensor in no buffer of this backend") +
        " where one of its own belongs");
  return false;
}

Status StrictHostBackend::write(const Tensor& dst, std::span<const std::byte> bytes) {
  if (dst.on_host()) return Backend::write(dst, bytes);
  Tensor host;
  if (!unwrap("write", dst, host)) return synchronize();
  return Backend::write(host, bytes);
}

Status StrictHostBackend::read(const Tensor& src, std::span<std::byte> bytes) {
  if (src.on_host()) return Backend::read(src, bytes);
  Tensor host;
  if (!unwrap("read", src, host)) return synchronize();
  return Backend::read(host, bytes);
}

Status StrictHostBackend::copy(const Tensor& src, const Tensor& dst) {
  Tensor from = src, to = dst;
  if (!src.on_host() && !unwrap("copy", src, from)) return synchronize();
  if (!dst.on_host() && !unwrap("copy", dst, to)) return synchronize();
  return Backend::copy(from, to);
}

Status StrictHostBackend::synchronize() {
  Status error = error_;
  error_ = ok_status();
  return error;
}

void StrictHostBackend::embedding(const Tensor& table, std::span<const int32_t> tokens,
                                  const Tensor& out) {
  Tensor t, o;
  if (unwrap("embedding", table, t) && unwrap("embedding", out, o)) cpu_.embedding(t, tokens, o);
}

void StrictHostBackend::matmul(const Tensor& x, const Tensor& w, const Tensor& out) {
  Tensor a, b, o;
  if (unwrap("matmul", x, a) && unwrap("matmul", w, b) && unwrap("matmul", out, o))
    cpu_.matmul(a, b, o);
}

void StrictHostBackend::rms_norm(const Tensor& x, const Tensor& weight, float eps,
                                 const Tensor& out) {
  Tensor a, w, o;
  if (unwrap("rms_norm", x, a) && unwrap("rms_norm", weight, w) && unwrap("rms_norm", out, o))
    cpu_.rms_norm(a, w, eps, o);
}

void StrictHostBackend::rope(const Tensor& x, std::span<const int32_t> positions,
                             const RopeSpec& rope) {
  Tensor a;
  if (unwrap("rope", x, a)) cpu_.rope(a, positions, rope);
}

void StrictHostBackend::swiglu(const Tensor& gate, const Tensor& up, const Tensor& out) {
  Tensor g, u, o;
  if (unwrap("swiglu", gate, g) && unwrap("swiglu", up, u) && unwrap("swiglu", out, o))
    cpu_.swiglu(g, u, o);
}

void StrictHostBackend::add(const Tensor& a, const Tensor& b, const Tensor& out) {
  Tensor x, y, o;
  if (unwrap("add", a, x) && unwrap("add", b, y) && unwrap("add", out, o)) cpu_.add(x, y, o);
}

void StrictHostBackend::add_bias(const Tensor& x, const Tensor& bias, const Tensor& out) {
  Tensor a, b, o;
  if (unwrap("add_bias", x, a) && unwrap("add_bias", bias, b) && unwrap("add_bias", out, o))
    cpu_.add_bias(a, b, o);
}

void StrictHostBackend::geglu(const Tensor& gate, const Tensor& up, const Tensor& out) {
  Tensor g, u, o;
  if (unwrap("geglu", gate, g) && unwrap("geglu", up, u) && unwrap("geglu", out, o))
    cpu_.geglu(g, u, o);
}

void StrictHostBackend::scale(const Tensor& x, float factor, const Tensor& out) {
  Tensor a, o;
  if (unwrap("scale", x, a) && unwrap("scale", out, o)) cpu_.scale(a, factor, o);
}

bool StrictHostBackend::unwrap_segment(const KVSegment& segment, KVSegment& host) {
  host = segment;
  if (segment.encoded() || segment.count == 0 || segment.k.on_host()) return true;
  return unwrap("attention: a stored segment's k", segment.k, host.k) &&
         unwrap("attention: a stored segment's v", segment.v, host.v);
}

void StrictHostBackend::attention(const AttentionParams& params) {
  AttentionParams p = params;
  if (!unwrap("attention: q", params.q, p.q) ||
      !unwrap("attention: batch_k", params.batch_k, p.batch_k) ||
      !unwrap("attention: batch_v", params.batch_v, p.batch_v) ||
      !unwrap("attention: out", params.out, p.out))
    return;
  segments_.resize(std::max(segments_.size(), params.views.size()));
  views_.clear();
  for (std::size_t v = 0; v < params.views.size(); ++v) {
    std::vector<KVSegment>& segments = segments_[v];
    segments.resize(params.views[v].segments.size());
    for (std::size_t s = 0; s < segments.size(); ++s)
      if (!unwrap_segment(params.views[v].segments[s], segments[s])) return;
    views_.push_back(KVView{segments});
  }
  p.views = views_;
  cpu_.attention(p);
}

void StrictHostBackend::masked_attention(const MaskedAttentionParams& params) {
  MaskedAttentionParams p = params;
  const char* op = "masked_attention";
  if (unwrap(op, params.q, p.q) && unwrap(op, params.cache_k, p.cache_k) &&
      unwrap(op, params.cache_v, p.cache_v) && unwrap(op, params.batch_k, p.batch_k) &&
      unwrap(op, params.batch_v, p.batch_v) && unwrap(op, params.mask, p.mask) &&
      unwrap(op, params.out, p.out))
    cpu_.masked_attention(p);
}

void StrictHostBackend::cache_update(const Tensor& cache, const Tensor& keep, const Tensor& insert,
                                     const Tensor& rows) {
  Tensor c, k, i, r;
  const char* op = "cache_update";
  if (unwrap(op, cache, c) && unwrap(op, keep, k) && unwrap(op, insert, i) && unwrap(op, rows, r))
    cpu_.cache_update(c, k, i, r);
}

Result<std::size_t> StrictHostBackend::adopt_weights(std::span<Tensor* const> weights) {
  std::map<const void*, std::pair<Buffer*, std::size_t>> placed;  // shared data stays shared
  std::size_t bytes = 0;
  for (Tensor* w : weights) {
    if (w == nullptr || w->data == nullptr) continue;
    auto it = placed.find(w->data);
    if (it == placed.end()) {
      const std::size_t size = w->bytes();
      ASSIGN_OR_RETURN(std::unique_ptr<Buffer> buffer, allocate(size, BufferUsage::kWeights));
      std::memcpy(static_cast<StrictBuffer*>(buffer.get())->address(), w->data, size);
      bytes += size;
      it = placed.emplace(w->data, std::pair{buffer.get(), size}).first;
      weights_.push_back(std::move(buffer));
    }
    w->buffer = it->second.first;
    w->offset = 0;
    w->data = nullptr;
  }
  return bytes;
}

}  // namespace tessera
