// Attention on encoded vectors equals attention on decoded ones: for every
// codec, transform_query + dot_encoded gives dot(q, decode(x)), and
// accumulate_encoded + finish_output gives Σ w·decode(x), to float rounding.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "plugins/compressor_common/half_codec.h"
#include "plugins/compressor_int4/int4_codec.h"
#include "plugins/compressor_int8/int8_codec.h"
#include "plugins/compressor_lattice/lattice_codec.h"
#include "tests/codec/gaussian_vectors.h"

namespace tessera {
namespace {

double norm(const float* x, int dim) {
  double s = 0.0;
  for (int i = 0; i < dim; ++i) s += static_cast<double>(x[i]) * x[i];
  return std::sqrt(s);
}

// Tolerances relative to the magnitudes involved: a float dot product of D
// terms, plus the two Hadamard rotations for the lattice.
constexpr double kRelativeTolerance = 2e-5;

template <typename Codec>
void expect_fused_equals_decoded(const Codec& codec, int dim, const std::string& name) {
  SCOPED_TRACE(name + " head_dim " + std::to_string(dim));
  constexpr int n = 40;
  test::GaussianSource gauss(51 + static_cast<uint64_t>(dim));
  std::vector<float> x = gauss.vectors(n, dim);
  for (int v = 0; v < n; ++v) {  // norms spread over four orders of magnitude
    const float factor = std::pow(10.0f, static_cast<float>(v % 5) - 2.0f);
    for (int i = 0; i < dim; ++i) x[v * dim + i] *= factor;
  }
  std::vector<uint8_t> records(codec.encoded_bytes(n, dim));
  codec.encode(x.data(), n, dim, records.data());
  std::vector<float> decoded(x.size());
  codec.decode(records.data(), n, dim, decoded.data());

  const std::vector<float> q = gauss.vectors(1, dim);
  std::vector<float> q_t(dim);
  codec.transform_query(q.data(), dim, q_t.data());
  std::vector<float> scores(n);
  codec.dot_encoded(q_t.data(), records.data(), n, dim, scores.data());
  for (int j = 0; j < n; ++j) {
    double expected = 0.0;
    for (int i = 0; i < dim; ++i) expected += static_cast<double>(q[i]) * decoded[j * dim + i];
    const double scale = norm(q.data(), dim) * norm(&decoded[j * dim], dim);
    EXPECT_NEAR(scores[j], expected, kRelativeTolerance * scale) << "record " << j;
  }

  // Weights of both signs, accumulated in two calls (acc += ...).
  std::vector<float> weights(n);
  for (int j = 0; j < n; ++j) weights[j] = gauss.next();
  std::vector<float> acc(dim, 0.0f);
  const std::size_t record_bytes = codec.encoded_bytes(1, dim);
  codec.accumulate_encoded(weights.data(), records.data(), n / 2, dim, acc.data());
  codec.accumulate_encoded(weights.data() + n / 2, records.data() + (n / 2) * record_bytes,
                           n - n / 2, dim, acc.data());
  std::vector<float> out(dim);
  codec.finish_output(acc.data(), dim, out.data());
  double magnitude = 0.0;
  for (int j = 0; j < n; ++j) magnitude += std::fabs(weights[j]) * norm(&decoded[j * dim], dim);
  for (int i = 0; i < dim; ++i) {
    double expected = 0.0;
    for (int j = 0; j < n; ++j) expected += static_cast<double>(weights[j]) * decoded[j * dim + i];
    EXPECT_NEAR(out[i], expected, kRelativeTolerance * magnitude) << "element " << i;
  }
}

TEST(EncodedAttention, LatticeMatchesDecodeThenCompute) {
  using lattice::ClampMode;
  using lattice::LatticeKind;
  for (LatticeKind kind : {LatticeKind::kD4, LatticeKind::kE8}) {
    for (ClampMode clamp : {ClampMode::kBox, ClampMode::kReference}) {
      for (int32_t q : {10, 152}) {  // 152: codes past 64 bits
        const LatticeCodec codec(lattice::LatticeConfig{kind, q, clamp});
        for (int dim : {8, 128}) expect_fused_equals_decoded(codec, dim, codec.describe());
      }
    }
  }
}

TEST(EncodedAttention, Int8MatchesDecodeThenCompute) {
  const Int8Codec codec;
  for (int dim : {8, 128}) expect_fused_equals_decoded(codec, dim, "int8");
}

TEST(EncodedAttention, HalfFloatsMatchDecodeThenCompute) {
  for (int dim : {8, 128}) {
    expect_fused_equals_decoded(F16Codec(), dim, "f16");
    expect_fused_equals_decoded(Bf16Codec(), dim, "bf16");
  }
}

TEST(EncodedAttention, Int4MatchesDecodeThenCompute) {
  for (int group : {8, 32}) {
    const Int4Codec codec(group);
    for (int dim : {8, 128})
      expect_fused_equals_decoded(codec, dim, "int4 group " + std::to_string(group));
  }
}

// The grouped calls give each head exactly the floats of the one-head calls.
TEST(EncodedAttention, HeadsCallsEqualOneHeadCallsBitForBit) {
  using lattice::ClampMode;
  using lattice::LatticeKind;
  std::vector<std::shared_ptr<const Compressor>> codecs = {
      std::make_shared<Int8Codec>(), std::make_shared<Int4Codec>(32),
      std::make_shared<Int4Codec>(3), std::make_shared<F16Codec>(), std::make_shared<Bf16Codec>()};
  for (LatticeKind kind : {LatticeKind::kD4, LatticeKind::kE8})
    for (ClampMode clamp : {ClampMode::kBox, ClampMode::kReference})
      for (int32_t q : {37, 152})  // 152: codes past 64 bits
        codecs.push_back(std::make_shared<LatticeCodec>(lattice::LatticeConfig{kind, q, clamp}));
  const auto bits = [](float x) { return std::bit_cast<uint32_t>(x); };
  for (const auto& codec : codecs) {
    for (int dim : {24, 8, 16}) {
      if (!codec->supports(dim).ok()) continue;
      for (int heads : {1, 3, 5}) {  // 5: more heads than int8 takes per pass
        SCOPED_TRACE(std::to_string(dim) + " " + std::to_string(heads) + " heads");
        constexpr int64_t n = 21;
        test::GaussianSource gauss(static_cast<uint64_t>(dim * 10 + heads));
        const std::vector<float> x = gauss.vectors(n, dim);
        std::vector<uint8_t> records(codec->encoded_bytes(n, dim));
        codec->encode(x.data(), n, dim, records.data());
        const std::vector<float> q = gauss.vectors(heads, dim);
        const std::vector<float> weights = gauss.vectors(heads, static_cast<int>(n));
        std::vector<float> scores(static_cast<std::size_t>(heads * n));
        codec->dot_encoded_heads(q.data(), heads, records.data(), n, dim, scores.data());
        std::vector<float> acc(static_cast<std::size_t>(heads * dim), 0.5f);
        codec->accumulate_encoded_heads(weights.data(), heads, records.data(), n, dim, acc.data());
        for (int h = 0; h < heads; ++h) {
          std::vector<float> one(n);
          codec->dot_encoded(q.data() + h * dim, records.data(), n, dim, one.data());
          for (int64_t j = 0; j < n; ++j) EXPECT_EQ(bits(scores[h * n + j]), bits(one[j]));
          std::vector<float> one_acc(static_cast<std::size_t>(dim), 0.5f);
          codec->accumulate_encoded(weights.data() + h * n, records.data(), n, dim, one_acc.data());
          for (int i = 0; i < dim; ++i) EXPECT_EQ(bits(acc[h * dim + i]), bits(one_acc[i]));
        }
      }
    }
  }
}

}  // namespace
}  // namespace tessera
