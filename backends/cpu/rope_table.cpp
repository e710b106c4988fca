#include "backends/cpu/rope_table.h"

#include <algorithm>
#include <new>

namespace tessera::cpu {

bool RopeTable::is_for(int64_t head_dim, const RopeSpec& rope) const {
  return head_dim == head_dim_ && rope.theta == rope_.theta &&
         rope.position_scale == rope_.position_scale && rope.pairs == rope_.pairs &&
         std::equal(rope.freq_factors.begin(), rope.freq_factors.end(), factors_.begin(),
                    factors_.end());
}

bool RopeTable::prepare(int64_t head_dim, const RopeSpec& rope, int64_t positions) {
  if (is_for(head_dim, rope) && positions <= positions_) return true;
  head_dim_ = head_dim;
  factors_.assign(rope.freq_factors.begin(), rope.freq_factors.end());
  rope_ = rope;
  rope_.freq_factors = factors_;
  positions_ = 0;
  const int64_t pairs = head_dim / 2;
  std::unique_ptr<float[]> table(
      new (std::nothrow) float[static_cast<std::size_t>(positions * pairs * 2)]);
  if (!table) return false;
  for (int64_t p = 0; p < positions; ++p)
    for (int64_t pair = 0; pair < pairs; ++pair) {
      float* cs = table.get() + (p * pairs + pair) * 2;
      rope_cos_sin(p, pair, head_dim, rope_, cs[0], cs[1]);
    }
  cos_sin_ = std::move(table);
  positions_ = positions;
  return true;
}

void RopeTable::cos_sin(int64_t position, int64_t pair, float& c, float& s) const {
  if (position >= 0 && position < positions_) {
    const float* cs = cos_sin_.get() + (position * (head_dim_ / 2) + pair) * 2;
    c = cs[0];
    s = cs[1];
    return;
  }
  rope_cos_sin(position, pair, head_dim_, rope_, c, s);
}

void RopeTable::rotate(const float* src, int64_t position, float* dst) const {
  const int64_t pairs = head_dim_ / 2;
  const bool tabled = position >= 0 && position < positions_;
  const float* cs = tabled ? cos_sin_.get() + position * pairs * 2 : nullptr;
  if (rope_.pairs == RopePairs::kAdjacent) {
    if (tabled) {
      // The table's row with no branch per pair, so the compiler can vectorise it.
      for (int64_t i = 0; i < 2 * pairs; i += 2) {
        const float v0 = src[i], v1 = src[i + 1], c = cs[i], s = cs[i + 1];
        dst[i] = v0 * c - v1 * s;
        dst[i + 1] = v0 * s + v1 * c;
      }
      return;
    }
    for (int64_t pair = 0; pair < pairs; ++pair) {
      float c = 0, s = 0;
      cos_sin(position, pair, c, s);
      const float v0 = src[2 * pair], v1 = src[2 * pair + 1];
      dst[2 * pair] = v0 * c - v1 * s;
      dst[2 * pair + 1] = v0 * s + v1 * c;
    }
    return;
  }
  // Halves: pair i is (i, i + head_dim/2).
  for (int64_t pair = 0; pair < pairs; ++pair) {
    float c = 0, s = 0;
    if (tabled) {
      c = cs[2 * pair];
      s = cs[2 * pair + 1];
    } else {
      cos_sin(position, pair, c, s);
    }
    const float v0 = src[pair], v1 = src[pair + pairs];
    dst[pair] = v0 * c - v1 * s;
    dst[pair + pairs] = v0 * s + v1 * c;
  }
}

}  // namespace tessera::cpu
