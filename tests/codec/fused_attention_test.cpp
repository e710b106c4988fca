// The CPU attention kernel reading encoded segments through their codec
// (no decoding) equals the same attention over the decoded values, within
// float rounding, for every codec that attends encoded: stored segments mixed
// with in-batch keys, a window rule, several segments, GQA, and records that
// hold one kv head or a token's kv heads (cache.codec_span = "token").
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "backends/cpu/cpu_kernels.h"
#include "plugins/compressor_int4/int4_codec.h"
#include "plugins/compressor_int8/int8_codec.h"
#include "plugins/compressor_lattice/lattice_codec.h"
#include "tests/codec/gaussian_vectors.h"

namespace tessera {
namespace {

struct CodecCase {
  std::string name;
  std::shared_ptr<const Compressor> codec;
};

std::vector<CodecCase> codecs() {
  lattice::LatticeConfig d4{lattice::LatticeKind::kD4, 38, lattice::ClampMode::kBox};
  lattice::LatticeConfig e8{lattice::LatticeKind::kE8, 37, lattice::ClampMode::kBox};
  lattice::LatticeConfig e8_coarse{lattice::LatticeKind::kE8, 4, lattice::ClampMode::kBox};
  return {{"lattice_d4_q38", std::make_shared<LatticeCodec>(d4)},
          {"lattice_e8_q37", std::make_shared<LatticeCodec>(e8)},
          {"lattice_e8_q4", std::make_shared<LatticeCodec>(e8_coarse)},
          {"int8", std::make_shared<Int8Codec>()},
          {"int4_g16", std::make_shared<Int4Codec>(16)}};
}

class FusedAttention : public ::testing::TestWithParam<CodecCase> {};

void check_fused_equals_decoded(const Compressor& codec, int64_t heads_per_record) {
  constexpr int64_t kHeads = 4, kKvHeads = 2, kHd = 32, kStored = 37, kN = 3;
  // A record is `width` floats; run r holds kv heads r * heads_per_record...
  const int64_t width = heads_per_record * kHd;
  const int64_t runs = kKvHeads / heads_per_record;
  const int64_t head_stride = heads_per_record == 1 ? kStored * kHd : kHd;
  test::GaussianSource gauss(7);
  const auto draw = [&](int64_t count) {
    std::vector<float> v(static_cast<std::size_t>(count));
    for (float& x : v) x = gauss.next();
    return v;
  };
  // Stored K/V as a store keeps them: per run of heads, kStored records in a row.
  const std::size_t record = codec.encoded_bytes(1, static_cast<int>(width));
  std::vector<float> k_raw = draw(kKvHeads * kStored * kHd), v_raw = draw(kKvHeads * kStored * kHd);
  std::vector<uint8_t> k_rec(runs * kStored * record), v_rec(k_rec.size());
  codec.encode(k_raw.data(), runs * kStored, static_cast<int>(width), k_rec.data());
  codec.encode(v_raw.data(), runs * kStored, static_cast<int>(width), v_rec.data());
  std::vector<float> k_dec(k_raw.size()), v_dec(v_raw.size());
  codec.decode(k_rec.data(), runs * kStored, static_cast<int>(width), k_dec.data());
  codec.decode(v_rec.data(), runs * kStored, static_cast<int>(width), v_dec.data());
  std::vector<int32_t> stored_positions(kStored);
  for (int64_t j = 0; j < kStored; ++j)
    stored_positions[static_cast<std::size_t>(j)] = static_cast<int32_t>(j);

  // Two segments each way: [0, 20) and [20, kStored).
  const auto segments = [&](bool encoded) {
    std::vector<KVSegment> out;
    for (const auto& [first, count] : {std::pair<int64_t, int64_t>{0, 20}, {20, kStored - 20}}) {
      KVSegment s;
      s.count = count;
      s.positions = stored_positions.data() + first;
      if (encoded) {
        s.codec = &codec;
        s.k_records = k_rec.data() + first * record;
        s.v_records = v_rec.data() + first * record;
        s.record_head_stride = kStored * record;
        s.heads_per_record = static_cast<int>(heads_per_record);
      } else {
        s.k = Tensor::contiguous(k_dec.data() + first * width, DType::kF32, {kKvHeads, count, kHd});
        s.k.stride = {head_stride, width, 1, 0};
        s.v = Tensor::contiguous(v_dec.data() + first * width, DType::kF32, {kKvHeads, count, kHd});
        s.v.stride = {head_stride, width, 1, 0};
      }
      out.push_back(s);
    }
    return out;
  };

  std::vector<float> q = draw(kN * kHeads * kHd), bk = draw(kN * kKvHeads * kHd),
                     bv = draw(kN * kKvHeads * kHd);
  std::vector<int32_t> positions = {kStored, kStored + 1, kStored + 2}, view_of(kN, 0);
  std::vector<uint64_t> mask = {0b001, 0b011, 0b111};  // causal
  const auto run = [&](bool encoded, WindowRule rule) {
    const std::vector<KVSegment> parts = segments(encoded);
    const KVView view{parts};
    std::vector<float> out(q.size());
    AttentionParams a;
    a.q = Tensor::contiguous(q.data(), DType::kF32, {kN, kHeads, kHd});
    a.batch_k = Tensor::contiguous(bk.data(), DType::kF32, {kN, kKvHeads, kHd});
    a.batch_v = Tensor::contiguous(bv.data(), DType::kF32, {kN, kKvHeads, kHd});
    a.positions = positions;
    a.views = std::span<const KVView>(&view, 1);
    a.view_of = view_of;
    a.in_batch = {mask, 1};
    a.rule = rule;
    a.out = Tensor::contiguous(out.data(), DType::kF32, {kN, kHeads, kHd});
    cpu::ThreadPool pool(2);
    cpu::RopeTable rope;
    cpu::attention(a, rope, &pool);
    return out;
  };
  // Sinks and a window that cuts the stored entries; then no window, where
  // every stored entry is seen.
  for (const WindowRule rule : {WindowRule{3, 30, false}, WindowRule{}}) {
    const std::vector<float> fused = run(true, rule);
    const std::vector<float> decoded = run(false, rule);
    double worst = 0;
    for (std::size_t i = 0; i < fused.size(); ++i)
      worst = std::max(worst, std::abs(static_cast<double>(fused[i]) - decoded[i]) /
                                  (1.0 + std::abs(static_cast<double>(decoded[i]))));
    EXPECT_LE(worst, 1e-5) << "window " << rule.window << ", " << heads_per_record
                           << " heads per record";
  }
}

TEST_P(FusedAttention, EqualsDecodeThenAttend) {
  check_fused_equals_decoded(*GetParam().codec, 1);
}

TEST_P(FusedAttention, RecordsSpanningATokensHeadsEqualDecodeThenAttend) {
  check_fused_equals_decoded(*GetParam().codec, 2);
}

INSTANTIATE_TEST_SUITE_P(Codecs, FusedAttention, ::testing::ValuesIn(codecs()),
                         [](const auto& param_info) { return param_info.param.name; });

}  // namespace
}  // namespace tessera
