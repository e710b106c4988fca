// The llama feed-forward block, x += w2 * (silu(w1 * norm(x)) * (w3 * norm(x))),
// as Backend ops: shared by the transformer's forward and the fixed-shape step
// so the two run the same math.
#pragma once

#include "core/backend/backend.h"
#include "core/model/model.h"

namespace tessera {

// x f32 [n, dim] updated in place; xb [n, dim], gate and up [n, hidden] are scratch.
inline void feed_forward_block(Backend& backend, const LayerWeights& layer, float rms_eps,
                               const Tensor& x, const Tensor& xb, const Tensor& gate,
                               const Tensor& up) {
  backend.rms_norm(x, layer.ffn_norm, rms_eps, xb);
  backend.matmul(xb, layer.w1, gate);
  backend.matmul(xb, layer.w3, up);
  backend.swiglu(gate, up, gate);
  backend.matmul(gate, layer.w2, xb);
  backend.add(x, xb, x);
}

}  // namespace tessera
