// The normalised Sylvester-Hadamard rotation H_D / sqrt(D) (natural order:
// H_1 = [1], H_2k = [[H_k, H_k], [H_k, -H_k]]). It is symmetric and
// orthonormal, so it is its own inverse: the encoder and decoder apply the same
// transform.
#pragma once

namespace tessera::lattice {

constexpr bool is_power_of_two(int n) {
  return n > 0 && (n & (n - 1)) == 0;
}

// v <- H_n v / sqrt(n) in place; n must be a power of two.
//
// Fixed summation order (bit-exact results depend on it): butterfly stages with
// span h = 1, 2, 4, ..., n/2; in each stage, for every pair (j, j + h) with
// j & h == 0 in increasing j, (a, b) <- (a + b, a - b); then every element is
// multiplied once by the fp32 value of 1/sqrt(n).
void hadamard_rotate(float* v, int n);

}  // namespace tessera::lattice
