#include "tests/backend/conformance/tolerances.h"

namespace tessera::conformance {
namespace {

// kAny: the row applies to every dtype of its op not listed before it.
constexpr DType kAny = static_cast<DType>(255);

struct Row {
  BackendOp op;
  DType dtype;
  Tolerance tolerance;
};

// How they were chosen: "measured" is the worst NMSE of the CPU against the
// same op computed in double from the same inputs (f32 x, weights as
// dequantize_row gives them), over this suite's cases: the error any correct
// f32 implementation with another summation order or other libm also has, so
// a backend may differ from the CPU by up to about four times it. Each bound
// leaves room for that and for a device's looser transcendentals (GLSL exp,
// tanh, inversesqrt: a few ulp), and stays orders of magnitude below what a
// wrong kernel gives (a lost sub-block scale, pairs rotated the wrong way, a
// missing 1/sqrt(head_dim), a dropped tail: NMSE 1e-3 to 1).
constexpr Row kTable[] = {
    {BackendOp::kAdd, kAny, {1e-12, "one IEEE add per element: exact but for flushed denormals"}},
    {BackendOp::kAddBias, kAny, {1e-12, "one IEEE add per element"}},
    {BackendOp::kScale, kAny, {1e-12, "one IEEE multiply per element"}},
    {BackendOp::kCacheUpdate, kAny, {1e-12, "selects and copies: exact"}},
    {BackendOp::kEmbedding,
     kAny,
     {1e-12,
      "a copy, an exact widening, or d * q (- dmin * m) with its roundings in another order"}},
    {BackendOp::kSwiglu,
     kAny,
     {1e-10, "exp and a divide per element (measured 7e-15); a device's exp may be a few ulp off"}},
    {BackendOp::kGeglu, kAny, {1e-10, "tanh per element (measured 4e-15)"}},
    {BackendOp::kRmsNorm,
     kAny,
     {1e-10, "a sum of squares in any order, then 1/sqrt (measured 9e-15)"}},
    {BackendOp::kRope,
     kAny,
     {1e-7,
      "f32 angles pos * scale * theta^(-2i/d) / factor: an ulp of pow, cos or sin is "
      "multiplied by the position (<= 4097 here; measured 4.3e-10)"}},
    {BackendOp::kMatmul,
     DType::kF32,
     {1e-10, "k products summed in any order and tiling (measured 2e-14)"}},
    {BackendOp::kMatmul,
     DType::kF16,
     {1e-10, "exact widening, then as f32 (measured 1.4e-13); f16 activations (1e-7) fail"}},
    {BackendOp::kMatmul, DType::kBF16, {1e-10, "as f16 (measured 1.3e-13)"}},
    {BackendOp::kMatmul,
     kAny,
     {2e-4,
      "the CPU rounds x to 8 bits per block of 32 (q8_0, q4_0) or 256 (q4_K, q6_K) for its integer "
      "dot products (measured 2.7e-5 against f32 x): a backend keeping x in f32, or rounding it "
      "otherwise, differs by up to about twice that"}},
    {BackendOp::kMaskedAttention,
     kAny,
     {1e-10, "dot products, a softmax and a weighted sum in any order (measured 1.6e-14)"}},
    {BackendOp::kAttention, kAny, {1e-10, "as masked_attention (not measured apart)"}},
};

}  // namespace

Tolerance tolerance(BackendOp op, DType dtype) {
  for (const Row& row : kTable)
    if (row.op == op && (row.dtype == dtype || row.dtype == kAny)) return row.tolerance;
  return {0.0, "no tolerance listed: exact"};
}

}  // namespace tessera::conformance
