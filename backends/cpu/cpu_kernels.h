// The reference CPU implementation of the Backend op set (see
// core/backend/backend.h for shapes and semantics). Free functions so tests
// and other backends can call them without loading the plugin.
//
// Callers pre-validate: the kernels check shapes only in debug builds. Every
// output element is computed by one thread with a fixed arithmetic order that
// depends neither on the thread count nor on how many tokens are in the batch,
// so results are bitwise reproducible. Outer dimensions may be strided (the
// Tensor's stride is used); the innermost dimension must be contiguous.
//
// `pool` must be non-null; it runs the work and provides the per-thread
// scratch (attention scores, f16 weight rows). CpuBackend::init reserves it for
// the longest context up front; a kernel grows it only when asked for more
// (a wider f16 matrix on the first forward), so decoding never allocates.
#pragma once

#include <cstdint>
#include <span>

#include "backends/cpu/rope_table.h"
#include "backends/cpu/thread_pool.h"
#include "core/backend/backend.h"
#include "core/tensor/tensor.h"

namespace tessera::cpu {

// out[t, :] = table[tokens[t], :]. table [vocab, dim] of any DType (rows of whole
// blocks), out f32 [n, dim]. `interleaved`: the table is in groups of 16
// rows (interleaved_rows.h).
void embedding(const Tensor& table, std::span<const int32_t> tokens, const Tensor& out,
               ThreadPool* pool, bool interleaved = false);

// out = x * w^T. x f32 [n, k], w [m, k] of any DType, out f32 [n, m]. Output columns
// are split across threads; each weight row is read once for all n tokens.
// `interleaved`: w is in groups of 16 rows (interleaved_rows.h), which only
// a kernel set with group kernels for its type reads (reads_interleaved).
void matmul(const Tensor& x, const Tensor& w, const Tensor& out, ThreadPool* pool,
            bool interleaved = false);

// out[t] = x[t] / sqrt(mean(x[t]^2) + eps) * weight. x, out f32 [n, d]; weight f32 [d].
// out may alias x.
void rms_norm(const Tensor& x, const Tensor& weight, float eps, const Tensor& out,
              ThreadPool* pool);

// In place: rotates pairs (2i, 2i+1) of every head by positions[t] * theta^(-2i/head_dim),
// the angles from `table` (prepared for this head_dim and theta; past its
// positions computed on the spot, the same floats). x f32 [n, heads,
// head_dim]; positions has n entries.
void rope(const Tensor& x, std::span<const int32_t> positions, const RopeTable& table,
          ThreadPool* pool);

// out = silu(gate) * up, all f32 [n, h] (contiguous). out may alias gate or up.
void swiglu(const Tensor& gate, const Tensor& up, const Tensor& out, ThreadPool* pool);

// out = a + b, all f32 of one shape (contiguous). out may alias a or b.
void add(const Tensor& a, const Tensor& b, const Tensor& out, ThreadPool* pool);

// out[t, :] = x[t, :] + bias; x, out f32 [n, d] (out may alias x), bias f32 [d].
void add_bias(const Tensor& x, const Tensor& bias, const Tensor& out, ThreadPool* pool);

// out = gelu_tanh(gate) * up, contiguous f32 of one size (out may alias gate).
void geglu(const Tensor& gate, const Tensor& up, const Tensor& out, ThreadPool* pool);

// out = x * factor, contiguous f32 of one size (out may alias x).
void scale(const Tensor& x, float factor, const Tensor& out, ThreadPool* pool);

// Grouped-query attention as Backend::attention describes it (per token and
// kv head, every visible key is scored once for all the query heads that read
// it; the softmax in fixed chunks of visible keys merged in order, so a long
// context may be split across threads: attention.cpp). `rope` must be prepared for the head size
// and theta when keys are read before RoPE or sinks are moved; positions past its table are
// computed on the spot. The scratch is sized for at least `context_hint` stored + batch keys (the
// backend's max_context), so later calls do not grow it.
void attention(const AttentionParams& params, const RopeTable& rope, ThreadPool* pool,
               int64_t context_hint = 0);

// Backend::masked_attention: per query and head, f32 scores over the cache
// slots and batch keys whose mask is finite, then their softmax-weighted
// values. The per-thread scratch holds slots + n scores (reserved at init
// from max_context, so a call within it allocates nothing).
void masked_attention(const MaskedAttentionParams& params, ThreadPool* pool);
// Backend::cache_update, on the calling thread (slots x n x head_dim work).
void cache_update(const Tensor& cache, const Tensor& keep, const Tensor& insert,
                  const Tensor& rows);

}  // namespace tessera::cpu
