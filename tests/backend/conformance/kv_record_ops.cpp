// K/V records in the backend's memory (docs/backends.md, step 5): encode_kv
// and round_trip_kv for every named layout the backend says it reads,
// against the codecs that define them (the int8 and int4 plugins' own
// encode and decode), on records that are not 4-byte aligned and share
// words with their neighbours, and with the vectors a codec must get right:
// zeros, a NaN, a scale saturated at 65504, subnormal scales; and attention
// over records in the backend's memory, read whole and gathered.
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "core/compressor/compressor.h"
#include "plugins/compressor_int4/int4_codec.h"
#include "plugins/compressor_int8/int8_codec.h"
#include "tests/backend/conformance/cases.h"
#include "tests/backend/conformance/device_io.h"
#include "tests/backend/conformance/fixture.h"

namespace tessera::conformance {
namespace {

struct RecordCase {
  std::string label;
  std::shared_ptr<Compressor> codec;
  int width;
};

std::vector<RecordCase> record_cases() {
  return {
      {"int8 width 48", std::make_shared<Int8Codec>(), 48},
      {"int8 width 7", std::make_shared<Int8Codec>(), 7},
      {"int4 width 64 group 32", std::make_shared<Int4Codec>(32), 64},
      {"int4 width 48 group 8", std::make_shared<Int4Codec>(8), 48},
      {"int4 width 8 group 8", std::make_shared<Int4Codec>(32), 8},
  };
}

// rows x heads vectors of `width` floats: random, with the edge cases.
std::vector<float> record_inputs(int64_t vectors, int width, uint64_t seed) {
  std::vector<float> x = random_values(static_cast<std::size_t>(vectors * width), seed, 3.0f);
  const auto vec = [&](int64_t v) { return x.data() + v * width; };
  for (int i = 0; i < width; ++i) {
    vec(0)[i] = 0.0f;                       // all zero: scale 0, codes 0
    vec(2)[i] *= 1e-6f;                     // subnormal fp16 scales
    vec(3)[i] = i == 0 ? 1e9f : vec(3)[i];  // the scale saturates at 65504
    vec(4)[i] = i % 3 == 0 ? 0.5f * vec(4)[i] : vec(4)[i];
  }
  vec(1)[width / 2] = std::numeric_limits<float>::quiet_NaN();  // decodes to NaN
  return x;
}

bool same_float(float a, float b) {
  return (std::isnan(a) && std::isnan(b)) || a == b;
}

TEST_P(Conformance, KVRecords) {
  Backend& b = backend();
  const int64_t rows = 5, heads = 3, vectors = rows * heads;
  int checked = 0;
  for (const RecordCase& c : record_cases()) {
    SCOPED_TRACE(c.label);
    const KVRecordLayout layout = c.codec->record_layout(c.width);
    ASSERT_TRUE(layout.named()) << "the codec names no layout";
    const std::size_t record = kv_record_bytes(layout);
    ASSERT_EQ(record, c.codec->encoded_bytes(1, c.width)) << "the layout's size is the codec's";
    if (!b.supports_kv_records(layout)) continue;
    ++checked;
    const std::vector<float> x = record_inputs(vectors, c.width, 91 + c.width);
    std::vector<uint8_t> want(record * static_cast<std::size_t>(vectors));
    c.codec->encode(x.data(), vectors, c.width, want.data());
    std::vector<float> want_floats(x.size());
    c.codec->decode(want.data(), vectors, c.width, want_floats.data());

    // The records 2 bytes into a buffer of 0xAB: unaligned, neighbours kept.
    constexpr std::size_t kLead = 2;
    const std::size_t bytes = kLead + want.size() + kLead;
    const std::vector<std::byte> fill(bytes, std::byte{0xAB});
    CONFORMANCE_ASSIGN_OR_FAIL(DeviceTensor src,
                               upload_f32(b, BufferUsage::kActivations, {rows, heads, c.width}, x));
    CONFORMANCE_ASSIGN_OR_FAIL(DeviceTensor arena, upload(b, BufferUsage::kKV, DType::kU8,
                                                          {static_cast<int64_t>(bytes)}, fill));
    const auto r = static_cast<int64_t>(record);
    const Tensor vectors_in =
        src.tensor.view(0, {1, rows, heads, c.width}, {0, heads * c.width, c.width, 1});
    // Heads apart by rows records (a store's [head][slot] order).
    const Tensor records = arena.tensor.view(kLead, {1, rows, heads, r}, {0, r, rows * r, 1});
    CONFORMANCE_ASSERT_OK(b.encode_kv(vectors_in, records, layout));
    CONFORMANCE_SYNC(b);
    std::vector<std::byte> got(bytes);
    CONFORMANCE_ASSERT_OK(b.read(arena.tensor, got));
    for (std::size_t i = 0; i < kLead; ++i) {
      EXPECT_EQ(got[i], std::byte{0xAB}) << "byte " << i << " before the records";
      EXPECT_EQ(got[bytes - 1 - i], std::byte{0xAB}) << "a byte after the records";
    }
    int64_t differing = 0;
    for (int64_t row = 0; row < rows; ++row)
      for (int64_t h = 0; h < heads; ++h) {
        const std::byte* at = got.data() + kLead + static_cast<std::size_t>((h * rows + row) * r);
        const uint8_t* expected = want.data() + static_cast<std::size_t>((row * heads + h) * r);
        differing += std::memcmp(at, expected, record) != 0;
      }
    // Bit for bit: the shader mirrors the codec's integer fp16 rounding and
    // rounds codes half to even, as the codec does.
    EXPECT_EQ(differing, 0) << differing << " of " << vectors << " records differ from the codec's";

    CONFORMANCE_ASSIGN_OR_FAIL(
        DeviceTensor seen,
        allocate_tensor(b, BufferUsage::kActivations, DType::kF32, {rows, heads, c.width}));
    CONFORMANCE_ASSERT_OK(b.round_trip_kv(
        vectors_in,
        seen.tensor.view(0, {1, rows, heads, c.width}, {0, heads * c.width, c.width, 1}), layout));
    CONFORMANCE_SYNC(b);
    CONFORMANCE_ASSIGN_OR_FAIL(std::vector<float> round, download_f32(b, seen.tensor));
    int64_t wrong = 0;
    for (std::size_t i = 0; i < round.size(); ++i) wrong += !same_float(round[i], want_floats[i]);
    EXPECT_EQ(wrong, 0) << wrong << " floats of the round trip differ from decode(encode(x))";
  }
  if (checked == 0)
    GTEST_SKIP() << name() << " keeps no K/V records in its own memory (raw f32 only)";
  // A layout the backend does not read, or a record shape that is not the
  // layout's, is an error, never a crash.
  CONFORMANCE_ASSIGN_OR_FAIL(DeviceTensor small,
                             allocate_tensor(b, BufferUsage::kKV, DType::kU8, {1, 1, 1, 3}));
  CONFORMANCE_ASSIGN_OR_FAIL(
      DeviceTensor one, allocate_tensor(b, BufferUsage::kActivations, DType::kF32, {1, 1, 1, 8}));
  EXPECT_FALSE(b.encode_kv(one.tensor, small.tensor, {KVRecordFormat::kInt8Symmetric, 8, 8}).ok());
  EXPECT_FALSE(b.encode_kv(one.tensor, small.tensor, KVRecordLayout{}).ok());
}

// Attention over K/V records in the backend's memory, as a store that keeps
// them hands them over: one segment seen whole (a static store: a backend may
// read the records as they lie, decoding in its attention) and the same
// records as three segments (a paged store: gathered and decoded first). The
// two must agree bit for bit, and both with the CPU over the decoded floats.
TEST_P(Conformance, AttentionOverKVRecords) {
  Backend& b = backend();
  const int64_t heads = 4, kv_heads = 2, stored = 37, n = 3;
  int checked = 0;
  for (const RecordCase& c : record_cases()) {
    if (c.width % 2 != 0) continue;  // head_dim is even
    SCOPED_TRACE(c.label);
    const KVRecordLayout layout = c.codec->record_layout(c.width);
    if (!b.supports_kv_records(layout)) continue;
    ++checked;
    const int64_t hd = c.width, r = static_cast<int64_t>(kv_record_bytes(layout));
    // Stored K/V [kv_heads, stored, hd], encoded as the codec does.
    const std::vector<float> k = random_values(static_cast<std::size_t>(kv_heads * stored * hd), 5);
    const std::vector<float> v = random_values(static_cast<std::size_t>(kv_heads * stored * hd), 6);
    std::vector<uint8_t> k_records(static_cast<std::size_t>(kv_heads * stored * r));
    std::vector<uint8_t> v_records(k_records.size());
    c.codec->encode(k.data(), kv_heads * stored, c.width, k_records.data());
    c.codec->encode(v.data(), kv_heads * stored, c.width, v_records.data());
    std::vector<float> k_decoded(k.size()), v_decoded(v.size());
    c.codec->decode(k_records.data(), kv_heads * stored, c.width, k_decoded.data());
    c.codec->decode(v_records.data(), kv_heads * stored, c.width, v_decoded.data());
    std::vector<int32_t> stored_positions(static_cast<std::size_t>(stored));
    for (int64_t j = 0; j < stored; ++j) stored_positions[static_cast<std::size_t>(j)] = j;
    std::vector<int32_t> positions(static_cast<std::size_t>(n)), view_of(n, 0);
    for (int64_t i = 0; i < n; ++i) positions[static_cast<std::size_t>(i)] = stored + i;
    std::vector<uint64_t> mask(static_cast<std::size_t>(n), 0);  // causal in the batch
    for (int64_t i = 0; i < n; ++i) mask[static_cast<std::size_t>(i)] = (uint64_t{2} << i) - 1;
    const Shape q_shape = {n, heads, hd}, kv_shape = {n, kv_heads, hd};
    std::vector<float> q = random_values(static_cast<std::size_t>(n * heads * hd), 7, 2.0f);
    std::vector<float> bk = random_values(static_cast<std::size_t>(n * kv_heads * hd), 8);
    std::vector<float> bv = random_values(static_cast<std::size_t>(n * kv_heads * hd), 9);

    AttentionParams ref;
    ref.q = host_tensor(q.data(), DType::kF32, q_shape);
    ref.batch_k = host_tensor(bk.data(), DType::kF32, kv_shape);
    ref.batch_v = host_tensor(bv.data(), DType::kF32, kv_shape);
    ref.positions = positions;
    ref.view_of = view_of;
    ref.in_batch = {mask, 1};
    ref.rope = llama_rope(10000.0f);
    KVSegment host_seg;
    host_seg.count = stored;
    host_seg.positions = stored_positions.data();
    host_seg.k = host_tensor(k_decoded.data(), DType::kF32, {kv_heads, stored, hd});
    host_seg.v = host_tensor(v_decoded.data(), DType::kF32, {kv_heads, stored, hd});
    const KVView host_view{std::span<const KVSegment>(&host_seg, 1)};
    ref.views = std::span<const KVView>(&host_view, 1);
    std::vector<float> want(static_cast<std::size_t>(n * heads * hd));
    ref.out = host_tensor(want.data(), DType::kF32, q_shape);
    reference().attention(ref);

    const std::vector<std::byte> k_bytes(
        reinterpret_cast<const std::byte*>(k_records.data()),
        reinterpret_cast<const std::byte*>(k_records.data()) + k_records.size());
    const std::vector<std::byte> v_bytes(
        reinterpret_cast<const std::byte*>(v_records.data()),
        reinterpret_cast<const std::byte*>(v_records.data()) + v_records.size());
    const Shape record_shape = {kv_heads, stored, r};
    CONFORMANCE_ASSIGN_OR_FAIL(DeviceTensor dk,
                               upload(b, BufferUsage::kKV, DType::kU8, record_shape, k_bytes));
    CONFORMANCE_ASSIGN_OR_FAIL(DeviceTensor dv,
                               upload(b, BufferUsage::kKV, DType::kU8, record_shape, v_bytes));
    const BufferUsage act = BufferUsage::kActivations;
    CONFORMANCE_ASSIGN_OR_FAIL(DeviceTensor dq, upload_f32(b, act, q_shape, q));
    CONFORMANCE_ASSIGN_OR_FAIL(DeviceTensor dbk, upload_f32(b, act, kv_shape, bk));
    CONFORMANCE_ASSIGN_OR_FAIL(DeviceTensor dbv, upload_f32(b, act, kv_shape, bv));
    // Segments [from, to) of the device records.
    const auto segment = [&](int64_t from, int64_t to) {
      KVSegment seg;
      seg.count = to - from;
      seg.positions = stored_positions.data() + from;
      seg.codec = c.codec.get();
      seg.k = dk.tensor.view(from * r, {kv_heads, seg.count, r}, {stored * r, r, 1});
      seg.v = dv.tensor.view(from * r, {kv_heads, seg.count, r}, {stored * r, r, 1});
      return seg;
    };
    const std::vector<KVSegment> whole = {segment(0, stored)};
    const std::vector<KVSegment> split = {segment(0, 10), segment(10, 26), segment(26, stored)};
    std::vector<std::vector<float>> got;
    std::vector<uint64_t> commands;
    for (const std::vector<KVSegment>* segments : {&whole, &split}) {
      CONFORMANCE_ASSIGN_OR_FAIL(DeviceTensor dout, allocate_tensor(b, act, DType::kF32, q_shape));
      const KVView view{*segments};
      AttentionParams p = ref;
      p.q = dq.tensor;
      p.batch_k = dbk.tensor;
      p.batch_v = dbv.tensor;
      p.views = std::span<const KVView>(&view, 1);
      p.out = dout.tensor;
      CONFORMANCE_SYNC(b);  // the uploads' copies counted before
      const uint64_t before = b.counters().commands;
      b.attention(p);
      commands.push_back(b.counters().commands - before);
      CONFORMANCE_SYNC(b);
      CONFORMANCE_ASSIGN_OR_FAIL(std::vector<float> out, download_f32(b, dout.tensor));
      expect_conforms(BackendOp::kAttention, DType::kF32, c.label + " over records", out, want);
      got.push_back(std::move(out));
    }
    int64_t differing = 0;
    for (std::size_t i = 0; i < got[0].size(); ++i) differing += got[0][i] != got[1][i];
    EXPECT_EQ(differing, 0) << differing << " of " << got[0].size()
                            << " outputs differ between the records read whole and gathered";
    // Read whole, the records are bound as they lie: nothing gathered or
    // decoded before the attention itself (where the backend counts).
    if (commands[1] > 0) {
      EXPECT_LT(commands[0], commands[1]);
    }
  }
  if (checked == 0) GTEST_SKIP() << name() << " keeps no K/V records in its own memory";
}

}  // namespace
}  // namespace tessera::conformance
