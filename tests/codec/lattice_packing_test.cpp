// Lattice bit accounting and packing: the §1.5 bit table, block codes that
// round-trip every lattice point of the box, and records whose decoded
// lattice points are exactly the quantizer's closest points.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "plugins/compressor_lattice/bit_stream.h"
#include "plugins/compressor_lattice/block_code.h"
#include "plugins/compressor_lattice/closest_point.h"
#include "plugins/compressor_lattice/lattice_codec.h"
#include "tests/codec/gaussian_vectors.h"

namespace tessera::lattice {
namespace {

LatticeCodec make_codec(LatticeKind lattice, int32_t q, ClampMode clamp = ClampMode::kBox) {
  return LatticeCodec(LatticeConfig{lattice, q, clamp});
}

struct BitTableRow {
  int32_t q;
  int d4_bits_per_block;
  int d4_bits_per_vector;
  int e8_bits_per_block;
  int e8_bits_per_vector;
};

// The algorithms note, §1.5, head_dim 128 (the 19 / 22 row split in two).
constexpr BitTableRow kBitTable[] = {
    {2, 9, 320, 19, 336},   {4, 12, 416, 26, 448},     {5, 13, 448, 28, 480},
    {10, 17, 576, 36, 608}, {15, 19, 640, 40, 672},    {19, 21, 704, 43, 720},
    {22, 21, 704, 44, 736}, {37, 24, 800, 50, 832},    {38, 25, 832, 51, 848},
    {76, 29, 960, 59, 976}, {152, 33, 1088, 67, 1104},
};

TEST(LatticePacking, BitsPerVectorMatchTheNoteTable) {
  for (const BitTableRow& row : kBitTable) {
    const LatticeCodec d4 = make_codec(LatticeKind::kD4, row.q);
    const LatticeCodec e8 = make_codec(LatticeKind::kE8, row.q);
    EXPECT_EQ(d4.format().bits_per_block(), row.d4_bits_per_block) << "D4 Q=" << row.q;
    EXPECT_EQ(d4.bits_per_vector(128), row.d4_bits_per_vector) << "D4 Q=" << row.q;
    EXPECT_EQ(e8.format().bits_per_block(), row.e8_bits_per_block) << "E8 Q=" << row.q;
    EXPECT_EQ(e8.bits_per_vector(128), row.e8_bits_per_vector) << "E8 Q=" << row.q;
    // The record is the payload rounded up to bytes plus two halves.
    EXPECT_EQ(d4.encoded_bytes(1, 128), (static_cast<std::size_t>(row.d4_bits_per_vector) + 7) / 8);
    EXPECT_EQ(e8.encoded_bytes(1, 128), (static_cast<std::size_t>(row.e8_bits_per_vector) + 7) / 8);
    EXPECT_EQ(e8.encoded_bytes(7, 128), 7 * e8.encoded_bytes(1, 128));
  }
}

TEST(LatticePacking, WidthCoversTheCodeCountWhereTheFormulaFallsShort) {
  // D4 at Q = 9: ceil(4·log2 19 - 1) = 16, but 19³·10 = 68590 codes need 17.
  EXPECT_EQ(make_codec(LatticeKind::kD4, 9).format().bits_per_block(), 17);
  // E8 at Q = 1: ceil(8·log2 3) = 13, but 2·3⁷·2 = 8748 codes need 14.
  EXPECT_EQ(make_codec(LatticeKind::kE8, 1).format().bits_per_block(), 14);
}

TEST(LatticePacking, ReferenceModeReportsItsWiderBoxCode) {
  // D4 keeps every coordinate of [-Q, Q]: ceil(4·log2 77) = 26 bits at Q = 38.
  EXPECT_EQ(make_codec(LatticeKind::kD4, 38, ClampMode::kReference).bits_per_vector(128),
            32 * 26 + 32);
  // E8 doubled coordinates in [-2Q, 2Q]: ceil(8·log2 149) = 58 bits at Q = 37.
  EXPECT_EQ(make_codec(LatticeKind::kE8, 37, ClampMode::kReference).bits_per_vector(128),
            16 * 58 + 32);
}

TEST(BitStream, WritesMostSignificantBitFirst) {
  uint8_t bytes[3] = {0xFF, 0xFF, 0xFF};
  BitWriter writer(bytes);
  writer.put<uint64_t>(0b101, 3);
  writer.put<uint64_t>(0x1FF, 9);
  writer.finish();
  EXPECT_EQ(bytes[0], 0b10111111);
  EXPECT_EQ(bytes[1], 0b11110000);  // zero padding after the last code
  EXPECT_EQ(bytes[2], 0xFF);        // untouched

  BitReader reader(bytes);
  EXPECT_EQ(reader.get<uint64_t>(3), 0b101u);
  EXPECT_EQ(reader.get<uint64_t>(9), 0x1FFu);
}

TEST(BitStream, WideCodesRoundTrip) {
  const WideCode a = (static_cast<WideCode>(0x5) << 64) | 0x0123456789ABCDEFull;    // 67 bits
  const WideCode b = (static_cast<WideCode>(0x7FFFFFFFFFFFFFFFull) << 64) | ~0ull;  // 127 bits
  uint8_t bytes[32] = {};
  BitWriter writer(bytes);
  writer.put(a, 67);
  writer.put(b, 127);
  writer.put<uint64_t>(1, 1);
  writer.finish();
  BitReader reader(bytes);
  EXPECT_TRUE(reader.get<WideCode>(67) == a);
  EXPECT_TRUE(reader.get<WideCode>(127) == b);
  EXPECT_EQ(reader.get<uint64_t>(1), 1u);
}

// Lattice points of the box for a block code: boxed closest points to random
// targets (many on the faces), plus the corners.
std::vector<std::vector<int32_t>> sample_points(LatticeKind lattice, int32_t q, int count) {
  test::GaussianSource gauss(static_cast<uint64_t>(q) * 7 + (lattice == LatticeKind::kE8));
  const int dim = block_dim(lattice);
  std::vector<std::vector<int32_t>> points;
  for (int k = 0; k < count; ++k) {
    float t[8];
    for (int i = 0; i < dim; ++i) t[i] = 0.7f * static_cast<float>(q) * gauss.next();
    std::vector<int32_t> p(static_cast<std::size_t>(dim));
    if (lattice == LatticeKind::kD4) {
      closest_d4_in_box(t, q, p.data());
    } else {
      closest_e8_in_box(t, q, p.data());
    }
    points.push_back(p);
  }
  const int32_t corner = lattice == LatticeKind::kD4 ? q : 2 * q;  // E8 doubled
  points.push_back(std::vector<int32_t>(static_cast<std::size_t>(dim), corner));
  points.push_back(std::vector<int32_t>(static_cast<std::size_t>(dim), -corner));
  if (lattice == LatticeKind::kE8) {  // the half-integer corners ±(Q - ½)
    points.push_back(std::vector<int32_t>(8, 2 * q - 1));
    points.push_back(std::vector<int32_t>(8, -(2 * q - 1)));
  }
  return points;
}

template <typename Word>
void expect_block_round_trip(const BlockCode& code, const std::vector<int32_t>& point) {
  const Word encoded = code.encode<Word>(point.data());
  const bool fills_word = code.bits() >= static_cast<int>(8 * sizeof(Word));
  EXPECT_TRUE(fills_word || (encoded >> code.bits()) == 0) << "code exceeds its width";
  std::vector<int32_t> decoded(point.size());
  code.decode<Word>(encoded, decoded.data());
  EXPECT_EQ(decoded, point);
}

TEST(LatticePacking, BlockCodesRoundTripEveryKindOfPoint) {
  for (int32_t q : {1, 2, 9, 37, 38, 152, 1000, BlockCode::kMaxQ}) {
    for (LatticeKind lattice : {LatticeKind::kD4, LatticeKind::kE8}) {
      const BlockCode code = lattice == LatticeKind::kD4 ? BlockCode::d4(q) : BlockCode::e8(q);
      const int32_t bound = lattice == LatticeKind::kD4 ? q : 2 * q;
      const BlockCode box = BlockCode::box(code.dim(), bound);
      for (const auto& point : sample_points(lattice, q, 200)) {
        SCOPED_TRACE(testing::Message() << lattice_name(lattice) << " Q=" << q);
        if (code.bits() <= 64) expect_block_round_trip<uint64_t>(code, point);
        expect_block_round_trip<WideCode>(code, point);
        expect_block_round_trip<WideCode>(box, point);
      }
    }
  }
}

// The tentative quantizer output and what the record gives back must match
// exactly, coordinates and scalars, for every lattice, clamp mode and width.
TEST(LatticePacking, RecordsDecodeToTheUnpackedClosestPoints) {
  test::GaussianSource gauss(11);
  const int head_dim = 128;
  std::vector<float> x = gauss.vectors(300, head_dim);
  for (int i = 0; i < head_dim; ++i) x[i] = 0.0f;  // a zero vector among them
  for (LatticeKind lattice : {LatticeKind::kD4, LatticeKind::kE8}) {
    for (ClampMode clamp : {ClampMode::kBox, ClampMode::kReference}) {
      for (int32_t q : {2, 10, 37, 38, 152, 4000}) {
        const LatticeCodec codec = make_codec(lattice, q, clamp);
        SCOPED_TRACE(codec.describe());
        std::vector<uint8_t> bytes(codec.encoded_bytes(300, head_dim));
        codec.encode(x.data(), 300, head_dim, bytes.data());
        const std::size_t record_bytes = codec.encoded_bytes(1, head_dim);
        for (int v = 0; v < 300; ++v) {
          std::vector<int32_t> quantized(head_dim);
          std::vector<int32_t> unpacked(head_dim);
          const RecordScalars expected =
              codec.quantizer().quantize(x.data() + v * head_dim, head_dim, quantized.data());
          const RecordScalars got =
              codec.format().unpack(bytes.data() + v * record_bytes, head_dim, unpacked.data());
          ASSERT_EQ(unpacked, quantized) << "vector " << v;
          ASSERT_EQ(got.norm16, expected.norm16);
          ASSERT_EQ(got.qmax16, expected.qmax16);
        }
      }
    }
  }
}

TEST(LatticePacking, ScalarsFollowThePayloadLittleEndian) {
  const LatticeCodec codec = make_codec(LatticeKind::kE8, 37);
  test::GaussianSource gauss(12);
  const std::vector<float> x = gauss.vectors(1, 128);
  std::vector<uint8_t> record(codec.encoded_bytes(1, 128));
  ASSERT_EQ(record.size(), 104u);  // 16 blocks · 50 bits = 100 bytes, then 4
  codec.encode(x.data(), 1, 128, record.data());
  std::vector<int32_t> coords(128);
  const RecordScalars scalars = codec.quantizer().quantize(x.data(), 128, coords.data());
  EXPECT_EQ(record[100] | (record[101] << 8), scalars.norm16);
  EXPECT_EQ(record[102] | (record[103] << 8), scalars.qmax16);
}

TEST(LatticePacking, FirstBlockCodeOpensTheRecord) {
  // D4 Q=2, head_dim 4: the zero point is u = (2, 2, 2, 2), code
  // ((2·5 + 2)·5 + 2)·3 + 1 = 187 = 0b010111011 in 9 bits, MSB first.
  const LatticeCodec codec = make_codec(LatticeKind::kD4, 2);
  const float zero[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  std::vector<uint8_t> record(codec.encoded_bytes(1, 4));
  ASSERT_EQ(record.size(), 2u + 4u);
  codec.encode(zero, 1, 4, record.data());
  EXPECT_EQ(record[0], 0b01011101);
  EXPECT_EQ(record[1], 0b10000000);
}

}  // namespace
}  // namespace tessera::lattice
