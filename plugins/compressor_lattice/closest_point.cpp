#include "plugins/compressor_lattice/closest_point.h"

#include <algorithm>
#include <cmath>

namespace tessera::lattice {
namespace {

// Wide enough that no coordinate the codec produces reaches it, small enough
// that a ±1 step cannot overflow int32.
constexpr int32_t kUnbounded = 1 << 30;

// The closest point of D_n ∩ [lo, hi]^n (closest_point.h); n is a template
// parameter so the per-block loops unroll.
template <int n>
void closest_dn_fixed(const float* t, int32_t lo, int32_t hi, int32_t* z) {
  int32_t sum = 0;
  for (int i = 0; i < n; ++i) {
    // rint rounds half to even in the default rounding mode, as torch.round;
    // unlike nearbyint, compilers inline it.
    z[i] = std::clamp(static_cast<int32_t>(std::rint(t[i])), lo, hi);
    sum += z[i];
  }
  if ((sum & 1) == 0) return;

  int best = -1;
  bool best_is_toward = false;
  float best_residual = 0.0f;
  int32_t best_step = 0;
  for (int i = 0; i < n; ++i) {
    const float d = t[i] - static_cast<float>(z[i]);
    const float residual = std::fabs(d);
    const int32_t toward = d >= 0.0f ? 1 : -1;
    if (z[i] + toward >= lo && z[i] + toward <= hi) {
      if (!best_is_toward || residual > best_residual) {
        best = i;
        best_is_toward = true;
        best_residual = residual;
        best_step = toward;
      }
    } else if (!best_is_toward && (best < 0 || residual < best_residual)) {
      best = i;
      best_residual = residual;
      best_step = -toward;
    }
  }
  // best >= 0 whenever hi > lo: every coordinate can step one way or the other.
  z[best] += best_step;
}

// w = 2 · (the nearer of the integer point a and the half-integer point b + ½).
void pick_nearer_coset(const float* t, const int32_t* a, const int32_t* b, int32_t* w) {
  // Sequential fp32 sums, as the reference compares them.
  float dist_a = 0.0f;
  float dist_b = 0.0f;
  for (int i = 0; i < 8; ++i) {
    const float ea = t[i] - static_cast<float>(a[i]);
    const float eb = t[i] - (static_cast<float>(b[i]) + 0.5f);
    dist_a += ea * ea;
    dist_b += eb * eb;
  }
  if (dist_a <= dist_b) {
    for (int i = 0; i < 8; ++i) w[i] = 2 * a[i];
  } else {
    for (int i = 0; i < 8; ++i) w[i] = 2 * b[i] + 1;
  }
}

void closest_e8_between(const float* t, int32_t int_lo, int32_t int_hi, int32_t half_lo,
                        int32_t half_hi, int32_t* w) {
  int32_t a[8];
  int32_t b[8];
  float shifted[8];
  closest_dn_fixed<8>(t, int_lo, int_hi, a);
  for (int i = 0; i < 8; ++i) shifted[i] = t[i] - 0.5f;
  closest_dn_fixed<8>(shifted, half_lo, half_hi, b);
  pick_nearer_coset(t, a, b, w);
}

}  // namespace

void closest_d4(const float* t, int32_t* z) {
  closest_dn_fixed<4>(t, -kUnbounded, kUnbounded, z);
}

void closest_d4_in_box(const float* t, int32_t q, int32_t* z) {
  closest_dn_fixed<4>(t, -q, q, z);
}

void closest_e8(const float* t, int32_t* w) {
  closest_e8_between(t, -kUnbounded, kUnbounded, -kUnbounded, kUnbounded, w);
}

void closest_e8_in_box(const float* t, int32_t q, int32_t* w) {
  // A half-integer point b + ½ lies in [-q, q] iff the integer b lies in [-q, q - 1].
  closest_e8_between(t, -q, q, -q, q - 1, w);
}

void clamp_coordinates(int32_t* c, int n, int32_t bound) {
  for (int i = 0; i < n; ++i) c[i] = std::clamp(c[i], -bound, bound);
}

}  // namespace tessera::lattice
