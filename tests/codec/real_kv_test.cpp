// The codecs on real K and V: stories260K's and tok512-ar-1m's keys (before
// RoPE, where published lattice numbers are measured) and values over a real
// text, against int8 and int4 at equal or fewer bits per vector.
//
// What holds is not what the issue hoped: at these models' head sizes (8 and
// 16) the lattice's two fp16 scalars per vector cost 4 and 2 bits per
// coordinate, so at equal bits int8 and int4 keep more payload and win. The
// lattice wins where that overhead is spread thin: at head_dim 128, and on
// these very models when one vector holds a token's K (or V) across all its KV
// heads (cache.codec_span = "token"; tests/sweep/codec_span_fidelity_test.cpp
// holds that through the engine). The tests pin all three facts, so a change
// to any shows; docs/kv-cache.md has the numbers.
#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "plugins/compressor_int4/int4_codec.h"
#include "plugins/compressor_int8/int8_codec.h"
#include "plugins/compressor_lattice/lattice_codec.h"
#include "tests/codec/gaussian_vectors.h"
#include "tests/support/shared_model_engine.h"

namespace tessera {
namespace {

// Every layer's K (before RoPE) and V head vectors over the first tokens of a
// text, as the identity codec stores them.
struct RealKv {
  int head_dim = 0;         // the length of one vector in k and v
  std::vector<float> k, v;  // n vectors of head_dim each
};

// Head vectors one by one (kPerHead), or each token's heads of one layer
// joined into one vector of kv_heads x head_dim (kPerToken).
enum class Grouping { kPerHead, kPerToken };

RealKv capture(const std::string& model, int64_t tokens, Grouping grouping = Grouping::kPerHead) {
  auto engine = support::shared_model_engine(
      model, "[cache]\ncodec_stage = \"pre_rope\"\nmax_tokens = " + std::to_string(tokens) + "\n");
  EXPECT_TRUE(engine.ok()) << engine.status().to_string();
  if (!engine.ok()) return {};
  Engine& e = **engine;
  FILE* f = std::fopen(TESSERA_SHARED_DIR "/data/tinystories_train_head.txt", "rb");
  std::string text(20000, '\0');
  text.resize(std::fread(text.data(), 1, text.size(), f));
  std::fclose(f);
  auto ids = e.tokenizer().encode(text, true);
  EXPECT_TRUE(ids.ok());
  ids->resize(static_cast<std::size_t>(tokens));
  SequenceState seq;
  EXPECT_TRUE(e.begin_sequence(seq).ok());
  std::vector<int32_t> positions(ids->size());
  std::iota(positions.begin(), positions.end(), 0);
  EXPECT_TRUE(e.transformer().forward(e.cache(), seq.id, *ids, positions).ok());
  RealKv kv;
  const int head_dim = e.model().config.head_dim;
  const int kv_heads = e.model().config.n_kv_heads;
  kv.head_dim = grouping == Grouping::kPerHead ? head_dim : head_dim * kv_heads;
  const auto take = [&](const KVSegment& s, int h, int64_t j) {
    const float* kp = s.k.f32() + h * s.k.stride[0] + j * s.k.stride[1];
    const float* vp = s.v.f32() + h * s.v.stride[0] + j * s.v.stride[1];
    kv.k.insert(kv.k.end(), kp, kp + head_dim);
    kv.v.insert(kv.v.end(), vp, vp + head_dim);
  };
  for (int l = 0; l < e.model().config.n_layers; ++l) {
    auto view = e.cache().view(seq.id, l);
    EXPECT_TRUE(view.ok());
    for (const KVSegment& s : view->segments) {
      if (grouping == Grouping::kPerHead) {
        for (int h = 0; h < kv_heads; ++h)
          for (int64_t j = 0; j < s.count; ++j) take(s, h, j);
      } else {
        for (int64_t j = 0; j < s.count; ++j)
          for (int h = 0; h < kv_heads; ++h) take(s, h, j);
      }
    }
  }
  return kv;
}

// mean ||x - decode(encode(x))||^2 / mean ||x||^2 over the vectors.
double relative_mse(const Compressor& codec, const std::vector<float>& x, int head_dim) {
  const int64_t n = static_cast<int64_t>(x.size()) / head_dim;
  std::vector<uint8_t> bytes(codec.encoded_bytes(n, head_dim));
  std::vector<float> back(x.size());
  codec.encode(x.data(), n, head_dim, bytes.data());
  codec.decode(bytes.data(), n, head_dim, back.data());
  double err = 0, norm = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    err += (x[i] - back[i]) * static_cast<double>(x[i] - back[i]);
    norm += x[i] * static_cast<double>(x[i]);
  }
  return err / norm;
}

struct Measured {
  std::string name;
  double bits, k_mse, v_mse;
};

Measured measure(const std::string& name, const Compressor& codec, const RealKv& kv) {
  return {name, codec.bits_per_vector(kv.head_dim), relative_mse(codec, kv.k, kv.head_dim),
          relative_mse(codec, kv.v, kv.head_dim)};
}

lattice::LatticeConfig lattice_at(lattice::LatticeKind kind, int q) {
  return {kind, q, lattice::ClampMode::kBox};
}

// The largest Q whose bits per vector stay within `budget`.
int largest_q_within(lattice::LatticeKind kind, double budget, int head_dim) {
  int best = 0;
  for (int q = 1; q <= 2000; ++q)
    if (LatticeCodec(lattice_at(kind, q)).bits_per_vector(head_dim) <= budget) best = q;
  return best;
}

class RealKvCodecs : public ::testing::TestWithParam<const char*> {};

TEST_P(RealKvCodecs, AtSmallHeadSizesTheScalarsCostTheLatticeItsLead) {
  const RealKv kv = capture(GetParam(), 256);
  ASSERT_GT(kv.k.size(), 0u);
  const Measured int8 = measure("int8", Int8Codec(), kv);
  const Measured int4 = measure("int4", Int4Codec(kv.head_dim), kv);
  for (const Measured& baseline : {int8, int4}) {
    for (const auto kind : {lattice::LatticeKind::kD4, lattice::LatticeKind::kE8}) {
      const int q = largest_q_within(kind, baseline.bits, kv.head_dim);
      ASSERT_GT(q, 0);
      const Measured lat =
          measure(std::string(lattice::lattice_name(kind)) + " q" + std::to_string(q),
                  LatticeCodec(lattice_at(kind, q)), kv);
      std::printf(
          "%s head_dim %d: %-10s %5.0f bits  K %.3e  V %.3e   vs %-4s %5.0f bits  K %.3e  V %.3e\n",
          GetParam(), kv.head_dim, lat.name.c_str(), lat.bits, lat.k_mse, lat.v_mse,
          baseline.name.c_str(), baseline.bits, baseline.k_mse, baseline.v_mse);
      EXPECT_LE(lat.bits, baseline.bits);
      EXPECT_GT(lat.k_mse, baseline.k_mse) << lat.name << " vs " << baseline.name << " (K)";
      EXPECT_GT(lat.v_mse, baseline.v_mse) << lat.name << " vs " << baseline.name << " (V)";
    }
  }
  // The codec itself works on real vectors: error falls about as 1/Q^2.
  const double coarse =
      measure("D4 q10", LatticeCodec(lattice_at(lattice::LatticeKind::kD4, 10)), kv).k_mse;
  const double fine =
      measure("D4 q40", LatticeCodec(lattice_at(lattice::LatticeKind::kD4, 40)), kv).k_mse;
  EXPECT_GT(coarse / fine, 8.0);
  EXPECT_LT(coarse / fine, 32.0);
}

// The way out for small heads, on the codec alone: one lattice vector per
// token and layer across all its KV heads (32 coordinates on
// stories260K, 16 x kv_heads on tok512-ar-1m) shares the two scalars, and at
// the bits int8 and int4 spend on those heads the lattice's error is lower.
TEST_P(RealKvCodecs, OneLatticeVectorPerTokenAcrossKvHeadsBeatsIntAtEqualBits) {
  const RealKv heads = capture(GetParam(), 256, Grouping::kPerHead);
  const RealKv tokens = capture(GetParam(), 256, Grouping::kPerToken);
  ASSERT_GT(heads.k.size(), 0u);
  const int kv_heads = tokens.head_dim / heads.head_dim;
  const Measured int8 = measure("int8", Int8Codec(), heads);
  const Measured int4 = measure("int4", Int4Codec(heads.head_dim), heads);
  for (const Measured& baseline : {int8, int4}) {
    for (const auto kind : {lattice::LatticeKind::kD4, lattice::LatticeKind::kE8}) {
      const int q = largest_q_within(kind, baseline.bits * kv_heads, tokens.head_dim);
      ASSERT_GT(q, 0);
      const Measured lat =
          measure(std::string(lattice::lattice_name(kind)) + " q" + std::to_string(q),
                  LatticeCodec(lattice_at(kind, q)), tokens);
      std::printf(
          "%s %d x %d per token: %-10s %5.0f bits  K %.3e  V %.3e   vs %d x %-4s %5.0f bits  K "
          "%.3e  V %.3e\n",
          GetParam(), kv_heads, heads.head_dim, lat.name.c_str(), lat.bits, lat.k_mse, lat.v_mse,
          kv_heads, baseline.name.c_str(), baseline.bits * kv_heads, baseline.k_mse,
          baseline.v_mse);
      EXPECT_LE(lat.bits, baseline.bits * kv_heads);
      EXPECT_LT(lat.k_mse, baseline.k_mse) << lat.name << " vs " << baseline.name << " (K)";
      EXPECT_LT(lat.v_mse, baseline.v_mse) << lat.name << " vs " << baseline.name << " (V)";
    }
  }
}

// Where the scalars are spread over 128 coordinates (Gaussian vectors; no
// model here has heads that wide), the lattice beats int4 at the same bits.
TEST(WideHeads, LatticeBeatsInt4AtEqualBitsAtHeadDim128) {
  RealKv kv;
  kv.head_dim = 128;
  test::GaussianSource gauss(11);
  std::vector<float> x(1500 * 128);
  for (float& value : x) value = gauss.next();
  kv.k = x;
  kv.v = x;
  const Measured int4 = measure("int4", Int4Codec(32), kv);
  const Measured d4 =
      measure("D4 q10", LatticeCodec(lattice_at(lattice::LatticeKind::kD4, 10)), kv);
  EXPECT_EQ(d4.bits, int4.bits);  // 576 both
  EXPECT_LT(d4.k_mse, int4.k_mse);
}

INSTANTIATE_TEST_SUITE_P(Models, RealKvCodecs,
                         ::testing::Values("stories260K.gguf", "tok512-ar-1m.gguf"));

}  // namespace
}  // namespace tessera
