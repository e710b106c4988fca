#include "backends/cpu/record_rows.h"

#include <cstring>

#include "core/tensor/dtype.h"
#include "core/tensor/half.h"

namespace tessera::cpu {
namespace {

float half_at(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return f16_to_f32(h);
}

}  // namespace

void decode_record_row(const Run& run, const uint8_t* row, int64_t head_dim, float* out) {
  switch (run.type) {
    case StoredRows::kF32:
      std::memcpy(out, row, static_cast<std::size_t>(head_dim) * sizeof(float));
      return;
    case StoredRows::kF16:
      for (int64_t d = 0; d < head_dim; ++d) out[d] = half_at(row + 2 * d);
      return;
    case StoredRows::kBF16:
      for (int64_t d = 0; d < head_dim; ++d) {
        uint16_t b;
        std::memcpy(&b, row + 2 * d, 2);
        out[d] = bf16_to_float(b);
      }
      return;
    case StoredRows::kInt8: {
      const float scale = half_at(row + run.scale_offset);
      for (int64_t d = 0; d < head_dim; ++d)
        out[d] = static_cast<float>(static_cast<int8_t>(row[d])) * scale;
      return;
    }
    case StoredRows::kInt4:
      for (int64_t d = 0; d < head_dim; ++d) {
        const int64_t e = run.first + d;
        const int code = ((e & 1) != 0 ? row[e / 2] >> 4 : row[e / 2] & 0x0F) - 8;
        out[d] = static_cast<float>(code) * half_at(row + run.scale_offset + 2 * (e / run.group));
      }
      return;
    case StoredRows::kCodec:
      break;
  }
}

}  // namespace tessera::cpu
