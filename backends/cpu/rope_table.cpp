#include "backends/cpu/rope_table.h"

#include <new>

namespace tessera::cpu {

bool RopeTable::prepare(int64_t head_dim, float theta, int64_t positions) {
  if (head_dim == head_dim_ && theta == theta_ && positions <= positions_) return true;
  const int64_t pairs = head_dim / 2;
  std::unique_ptr<float[]> table(
      new (std::nothrow) float[static_cast<std::size_t>(positions * pairs * 2)]);
  if (!table) return false;
  for (int64_t p = 0; p < positions; ++p)
    for (int64_t pair = 0; pair < pairs; ++pair) {
      float* cs = table.get() + (p * pairs + pair) * 2;
      rope_cos_sin(p, pair * 2, head_dim, theta, cs[0], cs[1]);
    }
  cos_sin_ = std::move(table);
  head_dim_ = head_dim;
  theta_ = theta;
  positions_ = positions;
  return true;
}

void RopeTable::rotate(const float* src, int64_t position, float* dst) const {
  const int64_t pairs = head_dim_ / 2;
  if (position >= 0 && position < positions_) {
    // rope_rotate_pair's expressions with the table's row: no branch per
    // pair, so the compiler can vectorise it.
    const float* cs = cos_sin_.get() + position * pairs * 2;
    for (int64_t i = 0; i < 2 * pairs; i += 2) {
      const float v0 = src[i], v1 = src[i + 1], c = cs[i], s = cs[i + 1];
      dst[i] = v0 * c - v1 * s;
      dst[i + 1] = v0 * s + v1 * c;
    }
    return;
  }
  for (int64_t pair = 0; pair < pairs; ++pair) {
    float c = 0;
    float s = 0;
    if (position >= 0 && position < positions_) {
      const float* cs = cos_sin_.get() + (position * pairs + pair) * 2;
      c = cs[0];
      s = cs[1];
    } else {
      rope_cos_sin(position, pair * 2, head_dim_, theta_, c, s);
    }
    dst[2 * pair] = src[2 * pair];
    dst[2 * pair + 1] = src[2 * pair + 1];
    rope_rotate_pair(dst + 2 * pair, c, s);
  }
}

}  // namespace tessera::cpu
