#include "backends/cpu/cpu_kernels.h"

#include <algorithm>
#include <cmath>

#include "backends/cpu/dot_kernels.h"
#include "backends/cpu/interleaved_rows.h"
#include "backends/cpu/kernel_support.h"
#include "backends/cpu/rope_table.h"
#include "core/status/status.h"
#include "core/tensor/block_quant.h"

namespace tessera::cpu {
namespace {

// Dot product with a fixed reduction order: lane l accumulates the elements
// i = l (mod kLanes) of the kLanes-aligned prefix, the lanes are combined in
// a fixed tree, then the tail is added in order. The independent lanes let the
// compiler use vector registers at -O2 without reassociating anything.
constexpr int kLanes = 8;

inline float dot(const float* a, const float* b, int64_t k) {
  float acc[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= k; i += kLanes)
    for (int l = 0; l < kLanes; ++l) acc[l] += a[i + l] * b[i + l];
  float s = ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
  for (; i < k; ++i) s += a[i] * b[i];
  return s;
}

}  // namespace

void embedding(const Tensor& table, std::span<const int32_t> tokens, const Tensor& out,
               ThreadPool* pool, bool interleaved) {
  const int64_t n = static_cast<int64_t>(tokens.size());
  const int64_t dim = table.dim(1);
  TESSERA_DCHECK(pool != nullptr, "embedding: no thread pool");
  TESSERA_DCHECK(table.rank == 2 && out.rank == 2, "embedding: tables and outputs are 2-D");
  TESSERA_DCHECK(out.dtype == DType::kF32 && out.dim(0) == n && out.dim(1) == dim,
                 "embedding: out must be f32 [n, dim]");
  TESSERA_DCHECK(inner_contiguous(table) && inner_contiguous(out), "embedding: inner stride");
#ifndef NDEBUG
  for (int32_t token : tokens)
    TESSERA_DCHECK(token >= 0 && token < table.dim(0), "embedding: token out of range");
#endif
  pool->parallel_for(
      0, n,
      [&](int64_t begin, int64_t end, int) {
        for (int64_t t = begin; t < end; ++t) {
          // Any weight type, through the reference decoder (a row per token).
          const int64_t row = tokens[static_cast<std::size_t>(t)];
          if (interleaved) {
            dequantize_interleaved_row(table.dtype, static_cast<const uint8_t*>(table.data),
                                       dtype_row_bytes(table.dtype, table.stride[0]), table.dim(0),
                                       row, dim, out.f32() + t * out.stride[0]);
            continue;
          }
          dequantize_row(table.dtype,
                         static_cast<const uint8_t*>(table.data) +
                             dtype_row_bytes(table.dtype, row * table.stride[0]),
                         dim, out.f32() + t * out.stride[0]);
        }
      },
      min_chunk_for(dim));
}

void matmul(const Tensor& x, const Tensor& w, const Tensor& out, ThreadPool* pool,
            bool interleaved) {
  const int64_t n = x.dim(0);
  const int64_t k = x.dim(1);
  const int64_t m = w.dim(0);
  TESSERA_DCHECK(pool != nullptr, "matmul: no thread pool");
  TESSERA_DCHECK(x.rank == 2 && w.rank == 2 && out.rank == 2, "matmul: operands are 2-D");
  TESSERA_DCHECK(x.dtype == DType::kF32 && out.dtype == DType::kF32, "matmul: x, out are f32");
  TESSERA_DCHECK(w.dim(1) == k, "matmul: w is [m, k]");
  TESSERA_DCHECK(out.dim(0) == n && out.dim(1) == m, "matmul: out is [n, m]");
  TESSERA_DCHECK(inner_contiguous(x) && inner_contiguous(w) && inner_contiguous(out),
                 "matmul: inner stride");
  if (const int64_t grouped = grouped_rows(w.dtype, m); interleaved && grouped > 0 && grouped < m) {
    // The whole groups, then the plain rows after them (interleaved_rows.h):
    // the same bytes, so the tail starts where it would in GGUF's layout.
    Tensor w_part = w, out_part = out;
    w_part.shape[0] = grouped;
    out_part.shape[1] = grouped;
    matmul(x, w_part, out_part, pool, true);
    w_part.shape[0] = m - grouped;
    w_part.data = static_cast<uint8_t*>(w.data) + dtype_row_bytes(w.dtype, grouped * w.stride[0]);
    out_part.shape[1] = m - grouped;
    out_part.data = out.f32() + grouped;
    matmul(x, w_part, out_part, pool, false);
    return;
  }
  const DotKernels& kernels = best_dot_kernels();
  const float* xd = x.f32();
  const int64_t xs = x.stride[0];
  // Rows start at whole blocks: one byte stride, computed once (not per row).
  const std::size_t row_bytes = dtype_row_bytes(w.dtype, w.stride[0]);
  const auto* wd = static_cast<const uint8_t*>(w.data);
  // Each thread computes the panel of its rows against every token; chunks
  // are whole register tiles of rows (the kernels' tiles are at most 16) and
  // whole groups of interleaved rows.
  const auto for_row_panels = [&](int64_t work_per_row, auto&& panel) {
    constexpr int64_t kChunkRows = kGroupRows;
    const int64_t tiles = (m + kChunkRows - 1) / kChunkRows;
    pool->parallel_for(
        0, tiles,
        [&](int64_t begin, int64_t end, int) {
          const int64_t first = begin * kChunkRows, last = std::min(m, end * kChunkRows);
          panel(wd + static_cast<std::size_t>(first) * row_bytes, first, last - first);
        },
        min_chunk_for(kChunkRows * work_per_row));
  };

  // Block-quantized weights meet activations quantized once per token for
  // all the rows: Q8 blocks (one scale per 32) for q8_0 and q4_0, Q8K blocks
  // (one per 256) for q4_K and q6_K; then integer dot products.
  const auto row_panels = [&](QuantPanelKernel kernel, const void* xq, int64_t stride,
                              int64_t blocks) {
    for_row_panels(n * k / 4, [&](const uint8_t* rows, int64_t first, int64_t count) {
      kernel({rows, row_bytes, count, xq, stride, n, blocks, out.f32() + first, out.stride[0]});
    });
  };
  if (const QuantPanelKernel kernel = kquant_panel_for(kernels, w.dtype, interleaved)) {
    const int64_t blocks = k / 256;
    auto* xq = static_cast<Q8KBlock*>(
        pool->shared_scratch(static_cast<std::size_t>(n * blocks) * sizeof(Q8KBlock)));
    TESSERA_CHECK(xq != nullptr, "cpu kernels: out of memory for quantized activations");
    pool->parallel_for(
        0, n,
        [&](int64_t begin, int64_t end, int) {
          for (int64_t t = begin; t < end; ++t)
            kernels.quantize_q8k(xd + t * xs, k, xq + t * blocks);
        },
        min_chunk_for(k));
    row_panels(kernel, xq, blocks, blocks);
    return;
  }
  if (const QuantPanelKernel kernel = integer_panel_for(kernels, w.dtype, interleaved)) {
    // The set's own arrangement of each token's blocks, after the Q8Blocks
    // on the way there (one token per thread at a time) when it arranges.
    const int64_t blocks = k / 32;
    const IntegerActivationLayout layout = integer_activation_layout(kernels, blocks);
    const std::size_t q8_bytes = kernels.arrange_q8 == nullptr
                                     ? 0
                                     : static_cast<std::size_t>(blocks) * sizeof(Q8Block) *
                                           static_cast<std::size_t>(pool->threads());
    const std::size_t arranged_offset = (q8_bytes + 63) / 64 * 64;
    auto* scratch = static_cast<uint8_t*>(
        pool->shared_scratch(arranged_offset + static_cast<std::size_t>(n) * layout.token_bytes));
    TESSERA_CHECK(scratch != nullptr, "cpu kernels: out of memory for quantized activations");
    uint8_t* xq = scratch + arranged_offset;
    pool->parallel_for(
        0, n,
        [&](int64_t begin, int64_t end, int thread) {
          auto* q8 = reinterpret_cast<Q8Block*>(scratch) + thread * blocks;
          for (int64_t t = begin; t < end; ++t)
            quantize_for_integer_kernel(kernels, w.dtype, xd + t * xs, k, q8,
                                        xq + static_cast<std::size_t>(t) * layout.token_bytes);
        },
        min_chunk_for(k));
    row_panels(kernel, xq, layout.stride, blocks);
    return;
  }

  // f32, f16 and bf16 rows are read in place, converted in registers.
  const FloatPanelKernel kernel = float_panel_for(kernels, w.dtype, interleaved);
  TESSERA_DCHECK(kernel != nullptr, "matmul: weight type without a kernel");
  for_row_panels(n * k, [&](const uint8_t* rows, int64_t first, int64_t count) {
    kernel({rows, row_bytes, count, xd, xs, n, k, out.f32() + first, out.stride[0]});
  });
}

void rms_norm(const Tensor& x, const Tensor& weight, float eps, const Tensor& out,
              ThreadPool* pool) {
  const int64_t n = x.dim(0);
  const int64_t d = x.dim(1);
  TESSERA_DCHECK(pool != nullptr, "rms_norm: no thread pool");
  TESSERA_DCHECK(x.rank == 2 && out.rank == 2 && out.dim(0) == n && out.dim(1) == d,
                 "rms_norm: x and out are [n, d]");
  TESSERA_DCHECK(weight.elements() == d, "rms_norm: weight is [d]");
  TESSERA_DCHECK(inner_contiguous(x) && inner_contiguous(out) && inner_contiguous(weight),
                 "rms_norm: inner stride");
  const float* wd = weight.f32();
  pool->parallel_for(
      0, n,
      [&](int64_t begin, int64_t end, int) {
        for (int64_t t = begin; t < end; ++t) {
          const float* xt = x.f32() + t * x.stride[0];
          float* ot = out.f32() + t * out.stride[0];
          const float mean = dot(xt, xt, d) / static_cast<float>(d);
          const float scale = 1.0f / std::sqrt(mean + eps);
          for (int64_t i = 0; i < d; ++i) ot[i] = wd[i] * (scale * xt[i]);
        }
      },
      min_chunk_for(d));
}

void rope(const Tensor& x, std::span<const int32_t> positions, const RopeTable& table,
          ThreadPool* pool) {
  const int64_t n = x.dim(0);
  const int64_t heads = x.dim(1);
  const int64_t head_dim = x.dim(2);
  TESSERA_DCHECK(pool != nullptr, "rope: no thread pool");
  TESSERA_DCHECK(x.rank == 3 && x.dtype == DType::kF32, "rope: x is f32 [n, heads, head_dim]");
  TESSERA_DCHECK(head_dim % 2 == 0, "rope: head_dim must be even");
  TESSERA_DCHECK(static_cast<int64_t>(positions.size()) == n, "rope: one position per token");
  TESSERA_DCHECK(inner_contiguous(x), "rope: inner stride");
  pool->parallel_for(
      0, n,
      [&](int64_t begin, int64_t end, int) {
        for (int64_t t = begin; t < end; ++t) {
          float* xt = x.f32() + t * x.stride[0];
          const int64_t pos = positions[static_cast<std::size_t>(t)];
          for (int64_t h = 0; h < heads; ++h) {
            float* head = xt + h * x.stride[1];
            table.rotate(head, pos, head);
          }
        }
      },
      min_chunk_for(heads * head_dim * 4));
}

namespace {

// out = act(gate) * up, element by element, in ranges across the pool:
// `range(gate, up, out, count)` does one range.
template <typename Range>
void gated_activation(const Tensor& gate, const Tensor& up, const Tensor& out, ThreadPool* pool,
                      int64_t grain, Range&& range) {
  const int64_t count = out.elements();
  TESSERA_DCHECK(pool != nullptr, "gated activation: no thread pool");
  TESSERA_DCHECK(gate.elements() == count && up.elements() == count,
                 "gated activation: shapes differ");
  TESSERA_DCHECK(gate.is_contiguous() && up.is_contiguous() && out.is_contiguous(),
                 "gated activation: tensors must be contiguous");
  const float* g = gate.f32();
  const float* u = up.f32();
  float* o = out.f32();
  pool->parallel_for(
      0, count,
      [&](int64_t begin, int64_t end, int) { range(g + begin, u + begin, o + begin, end - begin); },
      min_chunk_for(grain));
}

}  // namespace

void swiglu(const Tensor& gate, const Tensor& up, const Tensor& out, ThreadPool* pool) {
  gated_activation(gate, up, out, pool, 8, best_dot_kernels().silu_mul);
}

void add(const Tensor& a, const Tensor& b, const Tensor& out, ThreadPool* pool) {
  const int64_t count = out.elements();
  TESSERA_DCHECK(pool != nullptr, "add: no thread pool");
  TESSERA_DCHECK(a.elements() == count && b.elements() == count, "add: shapes differ");
  TESSERA_DCHECK(a.is_contiguous() && b.is_contiguous() && out.is_contiguous(),
                 "add: tensors must be contiguous");
  const float* ad = a.f32();
  const float* bd = b.f32();
  float* od = out.f32();
  pool->parallel_for(
      0, count,
      [&](int64_t begin, int64_t end, int) {
        for (int64_t i = begin; i < end; ++i) od[i] = ad[i] + bd[i];
      },
      min_chunk_for(1, 65536));
}

void add_bias(const Tensor& x, const Tensor& bias, const Tensor& out, ThreadPool* pool) {
  const int64_t n = x.dim(0);
  const int64_t d = x.dim(1);
  TESSERA_DCHECK(pool != nullptr, "add_bias: no thread pool");
  TESSERA_DCHECK(x.rank == 2 && out.rank == 2 && out.dim(0) == n && out.dim(1) == d,
                 "add_bias: x and out are [n, d]");
  TESSERA_DCHECK(bias.elements() == d && bias.dtype == DType::kF32, "add_bias: bias is f32 [d]");
  TESSERA_DCHECK(inner_contiguous(x) && inner_contiguous(out), "add_bias: inner stride");
  const float* b = bias.f32();
  pool->parallel_for(
      0, n,
      [&](int64_t begin, int64_t end, int) {
        for (int64_t t = begin; t < end; ++t) {
          const float* xt = x.f32() + t * x.stride[0];
          float* ot = out.f32() + t * out.stride[0];
          for (int64_t i = 0; i < d; ++i) ot[i] = xt[i] + b[i];
        }
      },
      min_chunk_for(d));
}

void geglu(const Tensor& gate, const Tensor& up, const Tensor& out, ThreadPool* pool) {
  gated_activation(
      gate, up, out, pool, 16, [](const float* g, const float* u, float* o, int64_t count) {
        constexpr float kSqrt2OverPi = 0.7978845608028654f;
        for (int64_t i = 0; i < count; ++i) {
          const float x = g[i];
          const float gelu =
              0.5f * x * (1.0f + std::tanh(kSqrt2OverPi * x * (1.0f + 0.044715f * x * x)));
          o[i] = gelu * u[i];
        }
      });
}

void scale(const Tensor& x, float factor, const Tensor& out, ThreadPool* pool) {
  const int64_t count = out.elements();
  TESSERA_DCHECK(pool != nullptr, "scale: no thread pool");
  TESSERA_DCHECK(x.elements() == count && x.is_contiguous() && out.is_contiguous(),
                 "scale: x and out are contiguous, of one size");
  const float* xd = x.f32();
  float* od = out.f32();
  pool->parallel_for(
      0, count,
      [&](int64_t begin, int64_t end, int) {
        for (int64_t i = begin; i < end; ++i) od[i] = xd[i] * factor;
      },
      min_chunk_for(1, 65536));
}

}  // namespace tessera::cpu
