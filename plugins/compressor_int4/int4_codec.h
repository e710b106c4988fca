// Grouped symmetric int4 KV codec, the 4-bit baseline (close to llama.cpp
// q4_0, at the same 4.5 bits per element for groups of 32). Each group of
// `group_size` consecutive elements along head_dim has an fp16 scale
// max|x| / 7 (rounded up, see symmetric_scale.h) and codes round(x / scale)
// in [-7, 7].
//
// Symmetric, not asymmetric (KIVI's min + scale): one fp16 per group instead
// of two (4.5 rather than 5 bits per element at group 32), K/V groups along
// head_dim are close to zero-centred, and a score stays scale · Σ q·code with
// no offset term. [-7, 7] rather than q4_0's [-8, 7] keeps zero exact and the
// grid symmetric; the one unused nibble costs 0.09 bit.
//
// Record (D = head_dim, g = effective group size): D/2 bytes of codes, element
// 2k in the low nibble and 2k + 1 in the high nibble of byte k, each stored
// as code + 8 (1..15); then D/g fp16 scales, group order, little-endian.
// 4·D + 16·D/g bits. A group with a NaN or inf element decodes to NaN.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/compressor/compressor.h"
#include "core/plugin/options.h"
#include "core/status/status.h"

namespace tessera {

inline constexpr OptionSpec kInt4CodecOptions[] = {
    {.name = "group_size",
     .type = OptionType::kInt,
     .default_value = "32",
     .description = "elements per fp16 scale along head_dim; clamped to head_dim, must divide it",
     .min = 1,
     .max = 1024},
};

class Int4Codec final : public Compressor {
 public:
  // Matches the option's maximum; larger groups gain nothing at any real head size.
  static constexpr int kMaxGroupSize = 1024;

  explicit Int4Codec(int group_size = 32);
  // The plugin factory's constructor.
  explicit Int4Codec(const OptionValues& options);

  // min(group_size, head_dim): a group never spans two vectors.
  int effective_group_size(int head_dim) const;
  // "int4 codec: group_size 32 > head_dim 8: group size clamped to head_dim 8"
  // when the group was clamped, else empty (for the core's log).
  std::string group_size_note(int head_dim) const;
  std::string notes(int head_dim) const override { return group_size_note(head_dim); }
  // OK when head_dim is positive and even and the effective group size
  // divides it; otherwise InvalidArgument naming head_dim.
  Status check_head_dim(int head_dim) const;
  Status supports(int head_dim) const override { return check_head_dim(head_dim); }
  // The records are core/compressor/kv_records.h's kInt4Symmetric, at the
  // effective group size (opaque for a head_dim the codec refuses).
  KVRecordLayout record_layout(int head_dim) const override;

  std::size_t encoded_bytes(int64_t n_vectors, int head_dim) const override;
  double bits_per_vector(int head_dim) const override;
  void encode(const float* src, int64_t n_vectors, int head_dim, uint8_t* dst) const override;
  void decode(const uint8_t* src, int64_t n_vectors, int head_dim, float* dst) const override;

  // Attention on records (same contract as LatticeCodec's; the codec domain
  // is the original one, so the query and output are copied).
  bool attends_encoded() const override { return true; }
  void transform_query(const float* q, int D, float* q_out) const override;
  void dot_encoded(const float* q_t, const uint8_t* records, int64_t n, int D,
                   float* scores) const override;
  void accumulate_encoded(const float* weights, const uint8_t* records, int64_t n, int D,
                          float* acc) const override;
  void finish_output(const float* acc, int D, float* out) const override;

  int group_size() const { return group_size_; }

 private:
  void check_or_abort(int head_dim) const;

  int group_size_;
};

}  // namespace tessera
