// One row of K/V records (visible_keys.h's Run) decoded to f32 exactly as
// its codec decodes it (kv_records.h): a key RoPE must turn as it is read.
#pragma once

#include <cstdint>

#include "backends/cpu/visible_keys.h"

namespace tessera::cpu {

// head_dim floats of the record row at `row` (a key or value row of run).
void decode_record_row(const Run& run, const uint8_t* row, int64_t head_dim, float* out);

}  // namespace tessera::cpu
