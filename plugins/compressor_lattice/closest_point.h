// Closest lattice points for one block (Conway & Sloane 1982), with the
// reference tie rules, plus variants that search only inside the box
// [-Q, Q]^n so every result has a lossless block code.
//
// E8 = D8 ∪ (D8 + ½·1) has half-integer points, so E8 results are written
// doubled (w = 2z, all integers); D4 results are the coordinates themselves.
//
// D_n = {z ∈ Z^n : Σz even} within [lo, hi]^n (n = 4 or 8; the reference is
// the unbounded case): each coordinate first takes its nearest integer in
// [lo, hi] (round half to even, then clamp); if the sum is odd, the one
// coordinate whose next-best value costs least moves there. A step toward t_i
// costs 1 - 2|d_i| (d = t - z), a step away 1 + 2|d_i|, so: the largest |d_i|
// among coordinates that can step toward t_i (first index wins ties; a zero d
// steps +1), else the smallest |d_i| stepping away. Unbounded, this is exactly
// the reference parity fix; bounded, it is the closest point of D_n in the box
// (one step is always cheaper than three).
#pragma once

#include <cstdint>

namespace tessera::lattice {

// Reference D4 (no box): z = closest point of D4 to t[0..3].
void closest_d4(const float* t, int32_t* z);
// The closest point of D4 ∩ [-q, q]^4.
void closest_d4_in_box(const float* t, int32_t q, int32_t* z);

// Reference E8 (no box): w = 2 · closest point of E8 to t[0..7]; the integer
// coset wins a tie of squared distances.
void closest_e8(const float* t, int32_t* w);
// w = 2 · the closest point of E8 ∩ [-q, q]^8: the integer coset is searched in
// [-q, q], the half-integer coset in [-q + ½, q - ½], then the nearer wins.
void closest_e8_in_box(const float* t, int32_t q, int32_t* w);

// c_i <- clamp(c_i, -bound, bound): the reference clamp, which may leave the
// lattice (an E8 half-integer ±(Q + ½) becomes the integer ±Q).
void clamp_coordinates(int32_t* c, int n, int32_t bound);

}  // namespace tessera::lattice
