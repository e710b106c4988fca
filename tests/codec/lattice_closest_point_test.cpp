// The lattice building blocks: the Hadamard rotation against its matrix, the
// closest-point tie rules of the reference, and the box-constrained searches
// against brute force.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "plugins/compressor_lattice/closest_point.h"
#include "plugins/compressor_lattice/hadamard.h"
#include "tests/codec/gaussian_vectors.h"

namespace tessera::lattice {
namespace {

TEST(Hadamard, MatchesTheNormalisedSylvesterMatrix) {
  test::GaussianSource gauss(1);
  for (int n : {1, 2, 4, 8, 16, 128}) {
    const std::vector<float> v = gauss.vectors(1, n);
    std::vector<float> fast = v;
    hadamard_rotate(fast.data(), n);
    for (int i = 0; i < n; ++i) {
      // Sylvester order: H[i][j] = (-1)^popcount(i & j).
      double expected = 0.0;
      for (int j = 0; j < n; ++j)
        expected += (std::popcount(static_cast<unsigned>(i & j)) % 2 ? -1.0 : 1.0) * v[j];
      expected /= std::sqrt(static_cast<double>(n));
      EXPECT_NEAR(fast[i], expected, 1e-5) << "n " << n << " i " << i;
    }
  }
}

TEST(Hadamard, IsItsOwnInverse) {
  test::GaussianSource gauss(2);
  std::vector<float> v = gauss.vectors(1, 128);
  const std::vector<float> original = v;
  hadamard_rotate(v.data(), 128);
  hadamard_rotate(v.data(), 128);
  for (int i = 0; i < 128; ++i) EXPECT_NEAR(v[i], original[i], 1e-5);
}

TEST(ClosestPoint, RoundsHalfToEven) {
  const float t[4] = {0.5f, 1.5f, 2.5f, -0.5f};
  int32_t z[4];
  closest_d4(t, z);  // 0 + 2 + 2 + 0 is even: no parity fix
  EXPECT_EQ(std::vector<int32_t>(z, z + 4), (std::vector<int32_t>{0, 2, 2, 0}));
}

TEST(ClosestPoint, ParityFixMovesTheLargestResidualTowardT) {
  const float t[4] = {0.1f, 0.0f, 0.0f, -0.6f};  // rounds to (0, 0, 0, -1): odd
  int32_t z[4];
  closest_d4(t, z);
  EXPECT_EQ(std::vector<int32_t>(z, z + 4), (std::vector<int32_t>{0, 0, 0, 0}));
}

TEST(ClosestPoint, ParityFixTieGoesToTheFirstIndex) {
  const float t[4] = {1.25f, 0.25f, 0.0f, 0.0f};  // residuals 0.25, 0.25: index 0 wins
  int32_t z[4];
  closest_d4(t, z);
  EXPECT_EQ(std::vector<int32_t>(z, z + 4), (std::vector<int32_t>{2, 0, 0, 0}));
}

TEST(ClosestPoint, ZeroResidualMovesUp) {
  const float t[4] = {1.0f, 0.0f, 0.0f, 0.0f};  // on Z^4, odd sum, every residual 0
  int32_t z[4];
  closest_d4(t, z);
  EXPECT_EQ(std::vector<int32_t>(z, z + 4), (std::vector<int32_t>{2, 0, 0, 0}));
}

TEST(ClosestPoint, E8TieGoesToTheIntegerCoset) {
  float t[8];
  for (float& x : t) x = 0.25f;  // 0 and ½·1 are both at squared distance 0.5
  int32_t w[8];
  closest_e8(t, w);
  for (int32_t x : w) EXPECT_EQ(x, 0);
}

TEST(ClosestPoint, E8TakesTheHalfIntegerCosetWhenNearer) {
  float t[8];
  for (float& x : t) x = 0.5f;
  int32_t w[8];
  closest_e8(t, w);
  for (int32_t x : w) EXPECT_EQ(x, 1);  // doubled ½
}

// Squared distance from t to the point w / 2.
double distance(const float* t, const int32_t* w, int n, double unit) {
  double d = 0.0;
  for (int i = 0; i < n; ++i) {
    const double e = t[i] - unit * w[i];
    d += e * e;
  }
  return d;
}

// The smallest squared distance from t to D_n ∩ [-q, q]^n (n = 4) or
// E8 ∩ [-q, q]^8 (n = 8), by enumerating each coset.
double brute_force_min(const float* t, int n, int32_t q, bool e8) {
  double best = std::numeric_limits<double>::infinity();
  std::vector<int32_t> w(static_cast<std::size_t>(n));
  // Integer coset: z in [-q, q]^n with Σz even. Half-integer coset (E8): b + ½
  // with b in [-q, q - 1]^n and Σb even.
  for (int half = 0; half <= (e8 ? 1 : 0); ++half) {
    const int32_t lo = -q;
    const int32_t side = 2 * q + 1 - half;
    int64_t count = 1;
    for (int i = 0; i < n; ++i) count *= side;
    for (int64_t index = 0; index < count; ++index) {
      int64_t rest = index;
      int32_t sum = 0;
      for (int i = 0; i < n; ++i) {
        const int32_t b = lo + static_cast<int32_t>(rest % side);
        rest /= side;
        sum += b;
        w[i] = 2 * b + half;
      }
      if (sum % 2 == 0) best = std::min(best, distance(t, w.data(), n, 0.5));
    }
  }
  return best;
}

bool in_d4(const int32_t* z, int32_t q) {
  int32_t sum = 0;
  for (int i = 0; i < 4; ++i) {
    if (std::abs(z[i]) > q) return false;
    sum += z[i];
  }
  return sum % 2 == 0;
}

bool in_e8(const int32_t* w, int32_t q) {
  int32_t sum = 0;
  for (int i = 0; i < 8; ++i) {
    if (std::abs(w[i]) > 2 * q || (w[i] - w[0]) % 2 != 0) return false;
    sum += w[i];
  }
  return sum % 4 == 0;
}

TEST(ClosestPoint, D4InBoxIsTheNearestBoxedLatticePoint) {
  test::GaussianSource gauss(3);
  for (int32_t q : {1, 2, 3}) {
    for (int trial = 0; trial < 300; ++trial) {
      float t[4];
      for (float& x : t) x = 1.3f * static_cast<float>(q) * gauss.next();  // often past the box
      int32_t z[4];
      closest_d4_in_box(t, q, z);
      ASSERT_TRUE(in_d4(z, q)) << "q " << q << " trial " << trial;
      int32_t doubled[4];
      for (int i = 0; i < 4; ++i) doubled[i] = 2 * z[i];
      EXPECT_NEAR(distance(t, doubled, 4, 0.5), brute_force_min(t, 4, q, false), 1e-5)
          << "q " << q << " trial " << trial;
    }
  }
}

TEST(ClosestPoint, E8InBoxIsTheNearestBoxedLatticePoint) {
  test::GaussianSource gauss(4);
  for (int32_t q : {1, 2}) {
    for (int trial = 0; trial < 40; ++trial) {
      float t[8];
      for (float& x : t) x = 1.3f * static_cast<float>(q) * gauss.next();
      int32_t w[8];
      closest_e8_in_box(t, q, w);
      ASSERT_TRUE(in_e8(w, q)) << "q " << q << " trial " << trial;
      EXPECT_NEAR(distance(t, w, 8, 0.5), brute_force_min(t, 8, q, true), 1e-5)
          << "q " << q << " trial " << trial;
    }
  }
}

TEST(ClosestPoint, BoxSearchEqualsTheReferenceInsideTheBox) {
  // Far from the box edges the box only removes points that were never
  // nearest, so both give the same point, ties included.
  test::GaussianSource gauss(5);
  const int32_t q = 1000;
  for (int trial = 0; trial < 2000; ++trial) {
    float t[8];
    for (float& x : t) x = 20.0f * gauss.next();
    if (trial % 4 == 0) {
      for (float& x : t) x = std::nearbyint(x * 2.0f) * 0.5f;  // many exact ties
    }
    int32_t reference[8];
    int32_t boxed[8];
    closest_e8(t, reference);
    closest_e8_in_box(t, q, boxed);
    for (int i = 0; i < 8; ++i) ASSERT_EQ(reference[i], boxed[i]) << "trial " << trial;
    closest_d4(t, reference);
    closest_d4_in_box(t, q, boxed);
    for (int i = 0; i < 4; ++i) ASSERT_EQ(reference[i], boxed[i]) << "trial " << trial;
  }
}

TEST(ClosestPoint, ReferenceClampCanLeaveE8) {
  // The half-integer point (3.5, ½, ..., ½, 1.5) is 0.1 away; with Q = 3 the
  // clamp turns 3.5 into the integer 3 while the rest stay half-integers.
  const int32_t q = 3;
  const float t[8] = {3.6f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 1.5f};
  int32_t w[8];
  closest_e8(t, w);
  EXPECT_EQ(w[0], 7);
  clamp_coordinates(w, 8, 2 * q);
  EXPECT_EQ(w[0], 6);
  EXPECT_FALSE(in_e8(w, q));
  closest_e8_in_box(t, q, w);
  EXPECT_TRUE(in_e8(w, q));
}

}  // namespace
}  // namespace tessera::lattice
