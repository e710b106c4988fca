// The division-free unpacker (code_unpacker.h) against the reference
// BlockCode::decode and BitReader, over every Q it serves; and attention on
// records through it, bit for bit against the plain per-record loops.
#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <string>
#include <vector>

#include "plugins/compressor_lattice/bit_stream.h"
#include "plugins/compressor_lattice/block_code.h"
#include "plugins/compressor_lattice/code_unpacker.h"
#include "plugins/compressor_lattice/lattice_codec.h"
#include "tests/codec/gaussian_vectors.h"

namespace tessera::lattice {
namespace {

__extension__ typedef unsigned __int128 Wide;

// The number of codes of a block code (block_code.h).
Wide code_count(const BlockCode& code) {
  Wide radix_power = 1;
  const int digits = code.kind() == BlockCode::Kind::kBox ? code.dim() : code.dim() - 1;
  for (int i = 0; i < digits; ++i) radix_power *= code.radix();
  switch (code.kind()) {
    case BlockCode::Kind::kD4:
      return radix_power * static_cast<Wide>(code.q() + 1);
    case BlockCode::Kind::kE8:
      return 2 * radix_power * static_cast<Wide>(code.q() + 1);
    case BlockCode::Kind::kBox:
      return radix_power;
  }
  return 0;
}

// Every block code the unpacker serves: D4 and boxes of 4 at every Q, E8 and
// boxes of 8 (E8 reference mode, doubled) up to 63 bits.
std::vector<BlockCode> served_codes() {
  std::vector<BlockCode> codes;
  for (int32_t q = 1; q <= BlockCode::kMaxQ; ++q) {
    codes.push_back(BlockCode::d4(q));
    codes.push_back(BlockCode::box(4, q));
    for (const BlockCode& code : {BlockCode::e8(q), BlockCode::box(8, 2 * q)})
      if (CodeUnpacker::supports(code)) codes.push_back(code);
  }
  return codes;
}

std::string describe(const BlockCode& code) {
  const char* kind = code.kind() == BlockCode::Kind::kD4   ? "D4"
                     : code.kind() == BlockCode::Kind::kE8 ? "E8"
                                                           : "box";
  return std::string(kind) + " dim " + std::to_string(code.dim()) + " q " +
         std::to_string(code.q()) + " bits " + std::to_string(code.bits());
}

std::vector<int32_t> unpacked(const CodeUnpacker& unpacker, uint64_t code) {
  std::vector<int32_t> coords(static_cast<std::size_t>(unpacker.block_dim()));
  unpacker.with_layout(
      [&](auto layout) { unpacker.decode<decltype(layout)::value>(code, coords.data(), 1); });
  return coords;
}

TEST(CodeUnpacker, ServesEveryCodeUpTo63BitsAndNoWider) {
  EXPECT_TRUE(CodeUnpacker::supports(BlockCode::e8(116)));
  EXPECT_FALSE(CodeUnpacker::supports(BlockCode::e8(117)));
  EXPECT_TRUE(CodeUnpacker::supports(BlockCode::box(8, 2 * 58)));
  EXPECT_FALSE(CodeUnpacker::supports(BlockCode::box(8, 2 * 59)));
  EXPECT_TRUE(CodeUnpacker::supports(BlockCode::d4(BlockCode::kMaxQ)));
  EXPECT_TRUE(CodeUnpacker::supports(BlockCode::box(4, BlockCode::kMaxQ)));
}

TEST(CodeUnpacker, DecodesLikeBlockCodeForEveryServedQ) {
  test::GaussianSource random(11);
  for (const BlockCode& code : served_codes()) {
    const CodeUnpacker unpacker(code);
    const auto count = static_cast<uint64_t>(code_count(code));
    // The ends, the codes around every power of two below the count, and
    // random codes.
    std::vector<uint64_t> samples = {0, 1, count - 2, count - 1};
    for (int bit = 1; bit < code.bits(); ++bit) {
      const uint64_t power = uint64_t{1} << bit;
      for (uint64_t c : {power - 1, power, power + 1})
        if (c < count) samples.push_back(c);
    }
    for (int k = 0; k < 8; ++k) samples.push_back(random.next_bits() % count);
    for (uint64_t c : samples) {
      std::vector<int32_t> expected(static_cast<std::size_t>(code.dim()));
      code.decode<uint64_t>(c, expected.data());
      ASSERT_EQ(unpacked(unpacker, c), expected) << describe(code) << " code " << c;
    }
  }
}

TEST(CodeUnpacker, DecodesEveryCodeOfSmallCodesExactly) {
  for (const BlockCode& code :
       {BlockCode::d4(1), BlockCode::d4(9), BlockCode::d4(38), BlockCode::e8(1), BlockCode::e8(2),
        BlockCode::box(4, 38), BlockCode::box(8, 2)}) {
    const CodeUnpacker unpacker(code);
    const auto count = static_cast<uint64_t>(code_count(code));
    for (uint64_t c = 0; c < count; c += 1 + count / 300000) {
      std::vector<int32_t> expected(static_cast<std::size_t>(code.dim()));
      code.decode<uint64_t>(c, expected.data());
      ASSERT_EQ(unpacked(unpacker, c), expected) << describe(code) << " code " << c;
    }
  }
}

TEST(CodeUnpacker, ReadsTheBitStreamLikeBitReader) {
  test::GaussianSource random(12);
  for (const BlockCode& code : served_codes()) {
    if (code.q() % 97 != 1 && code.bits() < 56) continue;  // every width, all the wide ones
    const CodeUnpacker unpacker(code);
    constexpr int kCodes = 19;
    std::vector<uint64_t> written(kCodes);
    std::vector<uint8_t> bytes(kCodes * 8 + CodeUnpacker::kReadBytes, 0xA5);
    BitWriter writer(bytes.data());
    for (uint64_t& c : written) {
      c = random.next_bits() >> (64 - code.bits());
      writer.put(c, code.bits());
    }
    writer.finish();
    BitReader reader(bytes.data());
    for (int k = 0; k < kCodes; ++k) {
      ASSERT_EQ(reader.get<uint64_t>(code.bits()), written[static_cast<std::size_t>(k)]);
      ASSERT_EQ(unpacker.read(bytes.data(), static_cast<int64_t>(k) * code.bits()),
                written[static_cast<std::size_t>(k)])
          << describe(code) << " code " << k;
    }
  }
}

uint32_t bits_of(float x) {
  return std::bit_cast<uint32_t>(x);
}

// dot_encoded and accumulate_encoded give exactly the floats of the plain
// loops over RecordFormat::unpack, for every record count (tiles, the padded
// tail) and the layouts the unpacker has.
TEST(CodeUnpacker, AttentionOnRecordsEqualsThePlainLoopsBitForBit) {
  const LatticeConfig configs[] = {
      {LatticeKind::kD4, 38, ClampMode::kBox},        {LatticeKind::kD4, 200, ClampMode::kBox},
      {LatticeKind::kE8, 37, ClampMode::kBox},        {LatticeKind::kE8, 4, ClampMode::kBox},
      {LatticeKind::kE8, 100, ClampMode::kBox},       {LatticeKind::kD4, 38, ClampMode::kReference},
      {LatticeKind::kD4, 300, ClampMode::kReference}, {LatticeKind::kE8, 37, ClampMode::kReference},
  };
  for (const LatticeConfig& config : configs) {
    const LatticeCodec codec(config);
    ASSERT_NE(codec.format().unpacker(), nullptr) << codec.describe();
    for (int dim : {8, 16, 128}) {
      for (int64_t n : {1, 2, 7, 8, 9, 23}) {
        SCOPED_TRACE(codec.describe() + " head_dim " + std::to_string(dim) + " n " +
                     std::to_string(n));
        test::GaussianSource gauss(static_cast<uint64_t>(dim * 100 + n));
        const std::vector<float> x = gauss.vectors(n, dim);
        std::vector<uint8_t> records(codec.encoded_bytes(n, dim));
        codec.encode(x.data(), n, dim, records.data());
        const std::vector<float> q_t = gauss.vectors(1, dim);
        std::vector<float> weights = gauss.vectors(1, static_cast<int>(n));

        std::vector<float> scores(static_cast<std::size_t>(n));
        codec.dot_encoded(q_t.data(), records.data(), n, dim, scores.data());
        std::vector<float> acc(static_cast<std::size_t>(dim), 0.25f);
        codec.accumulate_encoded(weights.data(), records.data(), n, dim, acc.data());

        std::vector<float> expected_acc(static_cast<std::size_t>(dim), 0.25f);
        std::vector<int32_t> coords(static_cast<std::size_t>(dim));
        for (int64_t j = 0; j < n; ++j) {
          const RecordScalars scalars = codec.format().unpack(
              records.data() + j * codec.encoded_bytes(1, dim), dim, coords.data());
          const float scale = codec.quantizer().coordinate_scale(scalars);
          float dot = 0.0f;
          for (int i = 0; i < dim; ++i) dot += q_t[i] * static_cast<float>(coords[i]);
          EXPECT_EQ(bits_of(scores[j]), bits_of(dot * scale)) << "record " << j;
          const float factor = weights[j] * scale;
          for (int i = 0; i < dim; ++i) expected_acc[i] += factor * static_cast<float>(coords[i]);
        }
        for (int i = 0; i < dim; ++i)
          EXPECT_EQ(bits_of(acc[i]), bits_of(expected_acc[i])) << "element " << i;
      }
    }
  }
}

}  // namespace
}  // namespace tessera::lattice
