#include "plugins/compressor_lattice/hadamard.h"

#include <cmath>

namespace tessera::lattice {

void hadamard_rotate(float* v, int n) {
  int h = 1;
  if (n >= 4) {
    // Stages h = 1 and h = 2 in one pass over groups of four: the same
    // additions in the same order, without the short inner loops.
    for (int i = 0; i < n; i += 4) {
      const float sum01 = v[i] + v[i + 1];
      const float diff01 = v[i] - v[i + 1];
      const float sum23 = v[i + 2] + v[i + 3];
      const float diff23 = v[i + 2] - v[i + 3];
      v[i] = sum01 + sum23;
      v[i + 1] = diff01 + diff23;
      v[i + 2] = sum01 - sum23;
      v[i + 3] = diff01 - diff23;
    }
    h = 4;
  }
  for (; h < n; h *= 2) {
    for (int start = 0; start < n; start += 2 * h) {
      for (int j = start; j < start + h; ++j) {
        const float a = v[j];
        const float b = v[j + h];
        v[j] = a + b;
        v[j + h] = a - b;
      }
    }
  }
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(n)));
  for (int i = 0; i < n; ++i) v[i] *= scale;
}

}  // namespace tessera::lattice
