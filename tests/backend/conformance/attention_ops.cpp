// The attention ops: masked_attention (head sizes 64/128/256, GQA 1/2/4,
// queries that see nothing, NaN in slots nobody sees), cache_update (NaN in
// the slots it drops) and attention over stored K/V on the host and in the
// backend's memory, as the CPU attention tests build it (several segments and
// sequences, keys kept before RoPE, a sink + window rule), two layers of one
// forward at a time.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "tests/backend/conformance/cases.h"
#include "tests/backend/conformance/device_io.h"
#include "tests/backend/conformance/fixture.h"

namespace tessera::conformance {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

std::size_t count(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return static_cast<std::size_t>(n);
}

void masked_attention_case(Conformance& t, const MaskedAttentionCase& c) {
  SCOPED_TRACE(c.label());
  Backend& b = t.backend();
  const Shape q_shape = {c.n, c.heads, c.head_dim};
  const Shape cache_shape = {c.kv_heads, c.slots, c.head_dim};
  const Shape batch_shape = {c.n, c.kv_heads, c.head_dim};
  const Shape mask_shape = {c.n, c.slots + c.n};
  std::vector<float> q = random_values(count(q_shape), c.seed, 2.0f);
  std::vector<float> ck = random_values(count(cache_shape), c.seed + 1, 2.0f);
  std::vector<float> cv = random_values(count(cache_shape), c.seed + 2);
  std::vector<float> bk = random_values(count(batch_shape), c.seed + 3, 2.0f);
  std::vector<float> bv = random_values(count(batch_shape), c.seed + 4);
  std::vector<float> mask = c.mask();
  if (c.nan_in_unseen_slots)
    for (int64_t h = 0; h < c.kv_heads; ++h)
      for (const int64_t s : {int64_t{0}, c.slots - 1})
        for (int64_t d = 0; d < c.head_dim; ++d) {
          ck[static_cast<std::size_t>((h * c.slots + s) * c.head_dim + d)] = kNaN;
          cv[static_cast<std::size_t>((h * c.slots + s) * c.head_dim + d)] = kNaN;
        }
  std::vector<float> want(count(q_shape));
  MaskedAttentionParams ref;
  ref.q = host_tensor(q.data(), DType::kF32, q_shape);
  ref.cache_k = host_tensor(ck.data(), DType::kF32, cache_shape);
  ref.cache_v = host_tensor(cv.data(), DType::kF32, cache_shape);
  ref.batch_k = host_tensor(bk.data(), DType::kF32, batch_shape);
  ref.batch_v = host_tensor(bv.data(), DType::kF32, batch_shape);
  ref.mask = host_tensor(mask.data(), DType::kF32, mask_shape);
  ref.out = host_tensor(want.data(), DType::kF32, q_shape);
  t.reference().masked_attention(ref);

  const BufferUsage act = BufferUsage::kActivations;
  CONFORMANCE_ASSIGN_OR_FAIL(DeviceTensor dq, upload_f32(b, act, q_shape, q));
  CONFORMANCE_ASSIGN_OR_FAIL(DeviceTensor dck, upload_f32(b, BufferUsage::kKV, cache_shape, ck));
  CONFORMANCE_ASSIGN_OR_FAIL(DeviceTensor dcv, upload_f32(b, BufferUsage::kKV, cache_shape, cv));
  CONFORMANCE_ASSIGN_OR_FAIL(DeviceTensor dbk, upload_f32(b, act, batch_shape, bk));
  CONFORMANCE_ASSIGN_OR_FAIL(DeviceTensor dbv, upload_f32(b, act, batch_shape, bv));
  CONFORMANCE_ASSIGN_OR_FAIL(DeviceTensor dmask, upload_f32(b, act, mask_shape, mask));
  CONFORMANCE_ASSIGN_OR_FAIL(DeviceTensor dout, allocate_tensor(b, act, DType::kF32, q_shape));
  MaskedAttentionParams p;
  p.q = dq.tensor;
  p.cache_k = dck.tensor;
  p.cache_v = dcv.tensor;
  p.batch_k = dbk.tensor;
  p.batch_v = dbv.tensor;
  p.mask = dmask.tensor;
  p.out = dout.tensor;
  b.masked_attention(p);
  CONFORMANCE_SYNC(b);
  CONFORMANCE_ASSIGN_OR_FAIL(std::vector<float> got, download_f32(b, dout.tensor));
  t.expect_conforms(BackendOp::kMaskedAttention, DType::kF32, c.label(), got, want);
  // A query that sees nothing gets zeros, exactly.
  const int64_t row = c.heads * c.head_dim;
  for (const int64_t i : c.hidden_rows)
    for (int64_t e = 0; e < row; ++e)
      ASSERT_EQ(got[static_cast<std::size_t>(i * row + e)], 0.0f)
          << "query " << i << " sees nothing, yet element " << e << " is not 0";
}

void cache_update_case(Conformance& t, const CacheUpdateCase& c) {
  SCOPED_TRACE(c.label());
  Backend& b = t.backend();
  const Shape cache_shape = {c.kv_heads, c.slots, c.head_dim};
  const Shape rows_shape = {c.n, c.kv_heads, c.head_dim};
  std::vector<float> cache = random_values(count(cache_shape), c.seed, 2.0f);
  std::vector<float> rows = random_values(count(rows_shape), c.seed + 1, 2.0f);
  std::vector<float> keep(static_cast<std::size_t>(c.slots));
  std::vector<float> insert(static_cast<std::size_t>(c.slots * c.n), 0.0f);
  // Odd slots are kept, even ones dropped: dropped slots hold NaN (never
  // read), batch row j goes into dropped slot 2j (the rest get zeros).
  for (int64_t s = 0; s < c.slots; ++s) {
    keep[static_cast<std::size_t>(s)] = s % 2 == 1 ? 1.0f : 0.0f;
    if (s % 2 == 0)
      for (int64_t h = 0; h < c.kv_heads; ++h)
        for (int64_t d = 0; d < c.head_dim; ++d)
          cache[static_cast<std::size_t>((h * c.slots + s) * c.head_dim + d)] = kNaN;
  }
  for (int64_t j = 0; j < c.n && 2 * j < c.slots; ++j)
    insert[static_cast<std::size_t>(2 * j * c.n + j)] = 1.0f;
  std::vector<float> want = cache;
  t.reference().cache_update(host_tensor(want.data(), DType::kF32, cache_shape),
                             host_tensor(keep.data(), DType::kF32, {c.slots}),
                             host_tensor(insert.data(), DType::kF32, {c.slots, c.n}),
                             host_tensor(rows.data(), DType::kF32, rows_shape));

  const BufferUsage act = BufferUsage::kActivations;
  CONFORMANCE_ASSIGN_OR_FAIL(DeviceTensor dcache,
                             upload_f32(b, BufferUsage::kKV, cache_shape, cache));
  CONFORMANCE_ASSIGN_OR_FAIL(DeviceTensor dkeep, upload_f32(b, act, {c.slots}, keep));
  CONFORMANCE_ASSIGN_OR_FAIL(DeviceTensor dinsert, upload_f32(b, act, {c.slots, c.n}, insert));
  CONFORMANCE_ASSIGN_OR_FAIL(DeviceTensor drows, upload_f32(b, act, rows_shape, rows));
  b.cache_update(dcache.tensor, dkeep.tensor, dinsert.tensor, drows.tensor);
  CONFORMANCE_SYNC(b);
  CONFORMANCE_ASSIGN_OR_FAIL(std::vector<float> got, download_f32(b, dcache.tensor));
  t.expect_conforms(BackendOp::kCacheUpdate, DType::kF32, c.label(), got, want);
}

// The stored K/V of one sequence on the host, [kv_heads, m, head_dim], and
// its segments over it; `positions` is shared by every layer, as a store's.
struct StoredSequence {
  std::vector<float> k, v;
  std::vector<KVSegment> segments;
};

// One layer's call: its values, the reference's result, and the backend's
// tensors and segments.
struct LayerCall {
  std::vector<StoredSequence> sequences;
  std::vector<KVView> views;
  std::vector<float> q, bk, bv, want;
  DeviceTensor dq, dbk, dbv, dout;
  std::vector<DeviceTensor> stored;
  std::vector<std::vector<KVSegment>> device_segments;
  std::vector<KVView> device_views;
};

// Two layers of one forward: the same visibility (AttentionParams::
// visibility_id) over other values, recorded one after the other and read
// after both, so a backend that keeps its plan and mask across layers must
// still read each layer's own K/V. With `stored_in_backend`, the stored K/V
// lie in the backend's memory (BufferUsage::kKV), as a store that took the
// backend keeps them, and the segments are views into it.
void attention_case(Conformance& t, const AttentionCase& c, bool stored_in_backend) {
  SCOPED_TRACE(c.label() + (stored_in_backend ? ", stored K/V in the backend" : ""));
  Backend& b = t.backend();
  const int64_t hd = c.head_dim;
  int64_t n = 0;
  for (int64_t count_of : c.batch) n += count_of;
  std::vector<std::vector<int32_t>> stored_positions(c.stored.size());
  std::vector<int32_t> positions, view_of;
  for (std::size_t s = 0; s < c.stored.size(); ++s) {
    const int64_t m = c.stored[s];
    for (int64_t j = 0; j < m; ++j) stored_positions[s].push_back(static_cast<int32_t>(j));
    for (int64_t i = 0; i < c.batch[s]; ++i) {
      positions.push_back(static_cast<int32_t>(m + i));
      view_of.push_back(static_cast<int32_t>(s));
    }
  }
  // Causal within a sequence; sequences do not see each other.
  const int64_t words = (n + 63) / 64;
  std::vector<uint64_t> mask(static_cast<std::size_t>(n * words), 0);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j <= i; ++j)
      if (view_of[static_cast<std::size_t>(i)] == view_of[static_cast<std::size_t>(j)])
        mask[static_cast<std::size_t>(i * words + j / 64)] |= uint64_t{1} << (j % 64);

  const Shape q_shape = {n, c.heads, hd};
  const Shape kv_shape = {n, c.kv_heads, hd};
  const BufferUsage act = BufferUsage::kActivations;
  const uint64_t visibility = next_visibility_id();
  constexpr int kLayers = 2;
  std::vector<LayerCall> layers(kLayers);
  std::vector<AttentionParams> calls(kLayers);
  for (int l = 0; l < kLayers; ++l) {
    LayerCall& call = layers[static_cast<std::size_t>(l)];
    uint64_t seed = c.seed * 100 + static_cast<uint64_t>(l) * 50;
    call.sequences.resize(c.stored.size());
    for (std::size_t s = 0; s < c.stored.size(); ++s) {
      StoredSequence& seq = call.sequences[s];
      const int64_t m = c.stored[s];
      seq.k = random_values(static_cast<std::size_t>(c.kv_heads * m * hd), seed++, 2.0f);
      seq.v = random_values(static_cast<std::size_t>(c.kv_heads * m * hd), seed++);
      const int parts = m == 0 ? 0 : std::min<int>(c.segments, static_cast<int>(m));
      int64_t start = 0;
      for (int part = 0; part < parts; ++part) {
        const int64_t end = m * (part + 1) / parts;
        KVSegment seg;
        seg.count = end - start;
        seg.positions = stored_positions[s].data() + start;
        seg.k = host_tensor(seq.k.data() + start * hd, DType::kF32, {c.kv_heads, seg.count, hd});
        seg.k.stride = {m * hd, hd, 1, 0};
        seg.v = host_tensor(seq.v.data() + start * hd, DType::kF32, {c.kv_heads, seg.count, hd});
        seg.v.stride = {m * hd, hd, 1, 0};
        seq.segments.push_back(seg);
        start = end;
      }
    }
    for (const StoredSequence& seq : call.sequences) call.views.push_back(KVView{seq.segments});
    call.q = random_values(count(q_shape), seed++, 2.0f);
    call.bk = random_values(count(kv_shape), seed++, 2.0f);
    call.bv = random_values(count(kv_shape), seed++);
    call.want.resize(count(q_shape));
    AttentionParams ref;
    ref.q = host_tensor(call.q.data(), DType::kF32, q_shape);
    ref.batch_k = host_tensor(call.bk.data(), DType::kF32, kv_shape);
    ref.batch_v = host_tensor(call.bv.data(), DType::kF32, kv_shape);
    ref.positions = positions;
    ref.views = call.views;
    ref.view_of = view_of;
    ref.in_batch = {mask, words};
    ref.rule = c.rule;
    ref.stored_keys = c.stored_keys;
    ref.rope = llama_rope(10000.0f);
    if (c.stored_keys == StoredKeys::kBeforeRope) ref.rope.pairs = RopePairs::kHalves;
    ref.out = host_tensor(call.want.data(), DType::kF32, q_shape);
    t.reference().attention(ref);

    CONFORMANCE_ASSIGN_OR_FAIL(call.dq, upload_f32(b, act, q_shape, call.q));
    CONFORMANCE_ASSIGN_OR_FAIL(call.dbk, upload_f32(b, act, kv_shape, call.bk));
    CONFORMANCE_ASSIGN_OR_FAIL(call.dbv, upload_f32(b, act, kv_shape, call.bv));
    CONFORMANCE_ASSIGN_OR_FAIL(call.dout, allocate_tensor(b, act, DType::kF32, q_shape));
    AttentionParams& p = calls[static_cast<std::size_t>(l)];
    p = ref;
    p.q = call.dq.tensor;
    p.batch_k = call.dbk.tensor;
    p.batch_v = call.dbv.tensor;
    p.out = call.dout.tensor;
    p.visibility_id = visibility;
    if (!stored_in_backend) continue;
    call.device_segments.resize(call.sequences.size());
    call.device_views.resize(call.sequences.size());
    for (std::size_t s = 0; s < call.sequences.size(); ++s) {
      const StoredSequence& seq = call.sequences[s];
      const int64_t m = c.stored[s];
      if (m == 0) continue;
      const Shape shape = {c.kv_heads, m, hd};
      CONFORMANCE_ASSIGN_OR_FAIL(DeviceTensor dk, upload_f32(b, BufferUsage::kKV, shape, seq.k));
      CONFORMANCE_ASSIGN_OR_FAIL(DeviceTensor dv, upload_f32(b, BufferUsage::kKV, shape, seq.v));
      int64_t start = 0;
      for (const KVSegment& host : seq.segments) {
        KVSegment seg = host;
        seg.k = dk.tensor.view(start * hd, {c.kv_heads, seg.count, hd}, {m * hd, hd, 1});
        seg.v = dv.tensor.view(start * hd, {c.kv_heads, seg.count, hd}, {m * hd, hd, 1});
        call.device_segments[s].push_back(seg);
        start += seg.count;
      }
      call.stored.push_back(std::move(dk));
      call.stored.push_back(std::move(dv));
    }
    for (std::size_t s = 0; s < call.sequences.size(); ++s)
      if (c.stored[s] != 0) call.device_views[s] = KVView{call.device_segments[s]};
    p.views = call.device_views;
  }
  CONFORMANCE_SYNC(b);  // the uploads done: both calls recorded into one submission
  for (const AttentionParams& p : calls) b.attention(p);
  CONFORMANCE_SYNC(b);
  for (int l = 0; l < kLayers; ++l) {
    SCOPED_TRACE("layer " + std::to_string(l) + " of the forward");
    const LayerCall& call = layers[static_cast<std::size_t>(l)];
    CONFORMANCE_ASSIGN_OR_FAIL(std::vector<float> got, download_f32(b, call.dout.tensor));
    t.expect_conforms(BackendOp::kAttention, DType::kF32, c.label(), got, call.want);
  }
}

}  // namespace

TEST_P(Conformance, MaskedAttention) {
  CONFORMANCE_REQUIRE(BackendOp::kMaskedAttention, DType::kF32);
  for (const MaskedAttentionCase& c : masked_attention_cases()) masked_attention_case(*this, c);
}

TEST_P(Conformance, CacheUpdate) {
  CONFORMANCE_REQUIRE(BackendOp::kCacheUpdate, DType::kF32);
  for (const CacheUpdateCase& c : cache_update_cases()) cache_update_case(*this, c);
}

// Stored K/V as host tensors (a store in host memory) and in the backend's
// own memory (a store that took the backend: CacheStore::use_backend).
TEST_P(Conformance, Attention) {
  CONFORMANCE_REQUIRE(BackendOp::kAttention, DType::kF32);
  for (const bool stored_in_backend : {false, true})
    for (const AttentionCase& c : attention_cases()) attention_case(*this, c, stored_in_backend);
}

// Backend::copy: contiguous and strided (innermost contiguous), between the
// host and the backend's memory both ways and within it, as the stores copy
// K/V (slot_arena.h); the result must be the host's copy exactly.
TEST_P(Conformance, StridedCopy) {
  Backend& b = backend();
  const Shape whole = {3, 5, 8};  // a [layers, slots, width]-like block
  const std::vector<float> values = random_values(count(whole), 77);
  // A strided view: every other slot of every layer, 6 of the 8 floats.
  const auto part = [](const Tensor& t) { return t.view(2, {3, 3, 6}, {40, 16, 1}); };
  std::vector<float> want(count(whole), 0.0f);
  {
    std::vector<float> src = values;
    const Tensor from = part(host_tensor(src.data(), DType::kF32, whole));
    const Tensor to = part(host_tensor(want.data(), DType::kF32, whole));
    ASSERT_TRUE(reference().copy(from, to).ok());
  }
  const std::vector<float> zeros(count(whole), 0.0f);
  // host -> backend, backend -> backend, backend -> host.
  CONFORMANCE_ASSIGN_OR_FAIL(DeviceTensor src, upload_f32(b, BufferUsage::kKV, whole, values));
  CONFORMANCE_ASSIGN_OR_FAIL(DeviceTensor mid, upload_f32(b, BufferUsage::kKV, whole, zeros));
  CONFORMANCE_ASSIGN_OR_FAIL(DeviceTensor dst, upload_f32(b, BufferUsage::kKV, whole, zeros));
  std::vector<float> host_src = values;
  ASSERT_TRUE(
      b.copy(part(host_tensor(host_src.data(), DType::kF32, whole)), part(mid.tensor)).ok());
  ASSERT_TRUE(b.copy(part(mid.tensor), part(dst.tensor)).ok());
  CONFORMANCE_SYNC(b);
  CONFORMANCE_ASSIGN_OR_FAIL(std::vector<float> got, download_f32(b, dst.tensor));
  EXPECT_EQ(got, want) << "host -> backend -> backend";
  std::vector<float> back(count(whole), 0.0f);
  ASSERT_TRUE(b.copy(part(src.tensor), part(host_tensor(back.data(), DType::kF32, whole))).ok());
  EXPECT_EQ(back, want) << "backend -> host";
  // Shapes that differ are refused, with what was given.
  const Status refused = b.copy(part(src.tensor), mid.tensor.view(0, {3, 3, 5}, {40, 16, 1}));
  EXPECT_FALSE(refused.ok());
}

}  // namespace tessera::conformance
