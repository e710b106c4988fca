// The compute interface every backend implements: the op set of the llama
// transformer. The CPU backend is the reference; others are tested op by op
// against it. Ops take pre-validated views and return void (hot path);
// anything a user can cause is checked earlier and reported as a Status.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "core/plugin/plugin_object.h"
#include "core/status/status.h"
#include "core/tensor/tensor.h"

namespace tessera {

struct DeviceInfo {
  std::string name;         // "cpu (2 threads)"
  std::string description;  // implementation details worth printing
  int threads = 1;
};

// Memory owned by a backend. On the CPU it is host memory.
class Buffer {
 public:
  virtual ~Buffer() = default;
  virtual void* data() = 0;
  virtual std::size_t size() const = 0;
};

// How batch tokens see each other inside attention. Cached entries are always
// visible to every batch token (the caller passes only the visible prefix).
enum class BatchVisibility : uint8_t {
  kCausal,         // token i sees batch tokens 0..i
  kBidirectional,  // every batch token sees every batch token (a diffusion block)
};

struct BackendOptions {
  int threads = 1;
  // ABI 1.1: the longest attention span (cached + batch tokens) the caller will
  // ask for, so a backend can size its scratch once instead of growing it
  // while decoding; 0 when unknown.
  int64_t max_context = 0;
};

class Backend : public PluginObject {
 public:
  // Called once after creation, before any other method.
  virtual Status init(const BackendOptions& options) = 0;
  virtual DeviceInfo device_info() const = 0;
  // Whether matmul accepts weights of this dtype (asked at load time).
  virtual bool supports_weight_dtype(DType dtype) const = 0;
  virtual Result<std::unique_ptr<Buffer>> allocate(std::size_t bytes) = 0;

  // out[t, :] = table[tokens[t], :]. table f32/f16 [vocab, dim], out f32 [n, dim].
  virtual void embedding(const Tensor& table, std::span<const int32_t> tokens,
                         const Tensor& out) = 0;
  // out = x * w^T. x f32 [n, k], w f32/f16 [m, k] (row-major, out x in), out f32 [n, m].
  virtual void matmul(const Tensor& x, const Tensor& w, const Tensor& out) = 0;
  // out[t] = x[t] / sqrt(mean(x[t]^2) + eps) * weight. x, out f32 [n, d]; weight f32 [d].
  virtual void rms_norm(const Tensor& x, const Tensor& weight, float eps, const Tensor& out) = 0;
  // Rotates adjacent pairs (2i, 2i+1) of every head by position * theta^(-2i/head_dim),
  // in place. x f32 [n, heads, head_dim]; positions has n entries.
  virtual void rope(const Tensor& x, std::span<const int32_t> positions, float theta) = 0;
  // out = silu(gate) * up, all f32 [n, h].
  virtual void swiglu(const Tensor& gate, const Tensor& up, const Tensor& out) = 0;
  // out = a + b, all f32 of the same shape (out may alias a).
  virtual void add(const Tensor& a, const Tensor& b, const Tensor& out) = 0;
  // Scaled dot-product attention with grouped KV heads (query head h reads kv head
  // h / (heads / kv_heads)).
  //   q        f32 [n, heads, head_dim]
  //   cache_k  f32 [kv_heads, cached, head_dim] (may be strided; cached may be 0)
  //   cache_v  same shape as cache_k
  //   batch_k  f32 [n, kv_heads, head_dim]: K of the batch tokens themselves
  //   batch_v  same shape as batch_k
  //   out      f32 [n, heads, head_dim]
  virtual void attention(const Tensor& q, const Tensor& cache_k, const Tensor& cache_v,
                         const Tensor& batch_k, const Tensor& batch_v, BatchVisibility visibility,
                         const Tensor& out) = 0;
};

}  // namespace tessera
