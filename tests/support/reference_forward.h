// The llama forward written out as plain loops over a dense visibility mask,
// sums in double, no cache: the simple reference the optimised forward
// (Transformer over a Backend and a CacheStore) is held to where bitwise
// comparisons with itself cannot say the rule is right (blocks, trees,
// branches). Needs f32 weights in the file's layout (load the model with
// load_model, not through an engine whose backend may repack them).
#pragma once

#include <cmath>
#include <cstdint>
#include <span>
#include <vector>

#include "core/model/model.h"

namespace tessera::support {

// Token i sees token j iff sees[i][j]. Returns logits [n, vocab].
inline std::vector<float> reference_logits(const LoadedModel& model,
                                           std::span<const int32_t> tokens,
                                           std::span<const int32_t> positions,
                                           const std::vector<std::vector<bool>>& sees) {
  const ModelConfig& c = model.config;
  const ModelWeights& w = model.weights;
  const std::size_t n = tokens.size();
  const auto dim = static_cast<std::size_t>(c.dim);
  const auto hd = static_cast<std::size_t>(c.head_dim);
  const auto heads = static_cast<std::size_t>(c.n_heads);
  const auto kv_heads = static_cast<std::size_t>(c.n_kv_heads);
  const auto hidden = static_cast<std::size_t>(c.hidden_dim);
  using Rows = std::vector<std::vector<double>>;
  // y[t] = W x[t], W f32 [out, in] row-major.
  const auto matmul = [](const Tensor& weight, const Rows& x) {
    const auto out = static_cast<std::size_t>(weight.dim(0));
    const auto in = static_cast<std::size_t>(weight.dim(1));
    Rows y(x.size(), std::vector<double>(out, 0.0));
    for (std::size_t t = 0; t < x.size(); ++t)
      for (std::size_t o = 0; o < out; ++o) {
        const float* row = weight.f32() + o * in;
        double sum = 0;
        for (std::size_t i = 0; i < in; ++i) sum += double{row[i]} * x[t][i];
        y[t][o] = sum;
      }
    return y;
  };
  const auto rms_norm = [&](const Rows& x, const Tensor& weight) {
    Rows y = x;
    for (auto& row : y) {
      double ss = 0;
      for (const double v : row) ss += v * v;
      const double scale = 1.0 / std::sqrt(ss / static_cast<double>(row.size()) + c.rms_eps);
      for (std::size_t i = 0; i < row.size(); ++i) row[i] *= scale * weight.f32()[i];
    }
    return y;
  };
  // Adjacent pairs (2i, 2i+1) turned by position * theta^(-2i / head_dim).
  const auto rope = [&](Rows& x, std::size_t n_heads) {
    for (std::size_t t = 0; t < x.size(); ++t)
      for (std::size_t h = 0; h < n_heads; ++h)
        for (std::size_t i = 0; i < hd; i += 2) {
          const double freq = 1.0 / std::pow(double{c.rope_theta},
                                             static_cast<double>(i) / static_cast<double>(hd));
          const double angle = positions[t] * freq;
          double& a = x[t][h * hd + i];
          double& b = x[t][h * hd + i + 1];
          const double a0 = a, b0 = b;
          a = a0 * std::cos(angle) - b0 * std::sin(angle);
          b = a0 * std::sin(angle) + b0 * std::cos(angle);
        }
  };

  Rows x(n, std::vector<double>(dim));
  for (std::size_t t = 0; t < n; ++t)
    for (std::size_t i = 0; i < dim; ++i)
      x[t][i] = w.token_embedding.f32()[static_cast<std::size_t>(tokens[t]) * dim + i];
  for (const LayerWeights& l : w.layers) {
    const Rows xb = rms_norm(x, l.attn_norm);
    Rows q = matmul(l.wq, xb), k = matmul(l.wk, xb);
    const Rows v = matmul(l.wv, xb);
    rope(q, heads);
    rope(k, kv_heads);
    Rows attn(n, std::vector<double>(heads * hd, 0.0));
    for (std::size_t t = 0; t < n; ++t)
      for (std::size_t h = 0; h < heads; ++h) {
        const std::size_t g = h / (heads / kv_heads);
        std::vector<double> scores(n, 0.0);
        double max = -INFINITY;
        for (std::size_t j = 0; j < n; ++j) {
          if (!sees[t][j]) continue;
          double dot = 0;
          for (std::size_t d = 0; d < hd; ++d) dot += q[t][h * hd + d] * k[j][g * hd + d];
          scores[j] = dot / std::sqrt(static_cast<double>(hd));
          max = std::max(max, scores[j]);
        }
        double total = 0;
        for (std::size_t j = 0; j < n; ++j)
          if (sees[t][j]) total += scores[j] = std::exp(scores[j] - max);
        for (std::size_t j = 0; j < n; ++j)
          if (sees[t][j])
            for (std::size_t d = 0; d < hd; ++d)
              attn[t][h * hd + d] += scores[j] / total * v[j][g * hd + d];
      }
    const Rows o = matmul(l.wo, attn);
    for (std::size_t t = 0; t < n; ++t)
      for (std::size_t i = 0; i < dim; ++i) x[t][i] += o[t][i];
    const Rows fb = rms_norm(x, l.ffn_norm);
    const Rows gate = matmul(l.w1, fb), up = matmul(l.w3, fb);
    Rows act(n, std::vector<double>(hidden));
    for (std::size_t t = 0; t < n; ++t)
      for (std::size_t i = 0; i < hidden; ++i)
        act[t][i] = gate[t][i] / (1.0 + std::exp(-gate[t][i])) * up[t][i];
    const Rows down = matmul(l.w2, act);
    for (std::size_t t = 0; t < n; ++t)
      for (std::size_t i = 0; i < dim; ++i) x[t][i] += down[t][i];
  }
  const Rows logits = matmul(w.output, rms_norm(x, w.output_norm));
  std::vector<float> out;
  for (const auto& row : logits)
    for (const double v : row) out.push_back(static_cast<float>(v));
  return out;
}

// The largest |a - b| over the largest |b|: the relative error of a row set.
inline double max_relative_error(std::span<const float> a, std::span<const float> b) {
  double diff = 0, scale = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    diff = std::max(diff, std::abs(double{a[i]} - double{b[i]}));
    scale = std::max(scale, std::abs(double{b[i]}));
  }
  return scale > 0 ? diff / scale : diff;
}

}  // namespace tessera::support
