// Backend::attention on the Vulkan backend: the visibility as the columns of
// one dense K/V and a mask of a bit per query and column (attention_gather.h),
// run by masked_attention's bit-mask variant. Over K/V in the device's memory the plan (which
// columns come from where, which are turned) and the uploaded mask are made by a forward's first
// layer and reused by the layers after it (AttentionParams::visibility_id): what a layer records is
// then its copies and turns only, with nothing built or uploaded on the host.
#include <algorithm>
#include <string>

#include "backends/vulkan/vulkan_backend.h"
#include "backends/vulkan/vulkan_dispatch.h"
#include "core/compressor/compressor.h"

namespace tessera {

using vulkan::kGatherKSlot;
using vulkan::kGatherVSlot;

namespace {

// Up to this many queries read a store's records where they lie, decoding in
// the attention shader; more decode them into the gather scratch once first.
// On lavapipe (stories260K, int8, static store): decoding (1 query) 6-12%
// faster read in place, prefill chunks of 128 queries 14% slower. A
// speculative verification (a few rows) stays in place.
constexpr int64_t kRecordsInPlaceQueries = 16;

}  // namespace

Status VulkanBackend::prepare_attention(const AttentionParams& p, MaskedAttentionParams& masked,
                                        KVRecordLayout& records) {
  if (!device_) return failed_precondition("the backend was not initialised (init())");
  RETURN_IF_ERROR(vulkan::AttentionGather::check(p));
  const int64_t n = p.q.dim(0), head_dim = p.q.dim(2), kv_heads = p.batch_k.dim(1);
  if (vulkan::AttentionGather::device_kv(p)) return prepare_device_attention(p, masked, records);
  vulkan::HostBatch batch;
  if (n > 0 && vulkan::AttentionGather::batch_on_host(p)) {
    // Keys turned on the host: the batch's K/V read back to be gathered too.
    RETURN_IF_ERROR(read_extent("batch_k", p.batch_k, batch_k_host_));
    RETURN_IF_ERROR(read_extent("batch_v", p.batch_v, batch_v_host_));
    batch = {batch_k_host_.data(), batch_v_host_.data(), p.batch_k.stride[0],
             p.batch_k.stride[1],  p.batch_v.stride[0],  p.batch_v.stride[1]};
  }
  gather_.gather(p, batch);
  ++attention_plans_built_;
  const int64_t slots = gather_.columns();
  const auto kv_bytes = static_cast<std::size_t>(kv_heads * slots * head_dim) * sizeof(float);
  const int64_t mask_row = gather_.mask_words() * 4;
  const auto mask_bytes = static_cast<std::size_t>(n * mask_row);
  // Into the upload ring, bound there by masked_attention (no copy).
  const std::size_t bytes[3] = {kv_bytes, kv_bytes, mask_bytes};
  const void* host[3] = {gather_.k().data(), gather_.v().data(), gather_.mask_bits().data()};
  for (const std::size_t b : bytes)
    if (b > max_binding_)
      return resource_exhausted("the gathered K/V and mask: " + std::to_string(b) +
                                " bytes are past the device's largest binding "
                                "(maxStorageBufferRange = " +
                                std::to_string(max_binding_) + " bytes)");
  RETURN_IF_ERROR(reserve_uploads(bytes[0] + bytes[1] + bytes[2]));
  Upload up[3];
  for (int b = 0; b < 3; ++b) {
    auto placed = upload(host[b], bytes[b]);
    if (!placed.ok()) return placed.status();
    up[b] = placed.value();
  }
  masked.q = p.q;
  masked.cache_k =
      Tensor::in_buffer(*up[0].buffer, up[0].offset, DType::kF32, {kv_heads, slots, head_dim});
  masked.cache_v =
      Tensor::in_buffer(*up[1].buffer, up[1].offset, DType::kF32, {kv_heads, slots, head_dim});
  masked.batch_k = p.batch_k;
  masked.batch_v = p.batch_v;
  masked.mask = Tensor::in_buffer(*up[2].buffer, up[2].offset, DType::kU8, {n, mask_row});
  masked.out = p.out;
  return ok_status();
}

VulkanBackend::AttentionPlan& VulkanBackend::plan_for(const AttentionParams& p) {
  AttentionPlan* oldest = &plans_[0];
  for (AttentionPlan& plan : plans_) {
    if (plan.gather.plan_holds_for(p)) {
      plan.last_used = ++plan_clock_;
      return plan;
    }
    if (plan.last_used < oldest->last_used) oldest = &plan;
  }
  oldest->gather.gather(p, vulkan::HostBatch{});
  oldest->mask_generation = 0;
  oldest->last_used = ++plan_clock_;
  ++attention_plans_built_;
  return *oldest;
}

Status VulkanBackend::prepare_device_attention(const AttentionParams& p,
                                               MaskedAttentionParams& masked,
                                               KVRecordLayout& records) {
  const int64_t n = p.q.dim(0), head_dim = p.q.dim(2), kv_heads = p.batch_k.dim(1);
  AttentionPlan& plan = plan_for(p);
  const vulkan::AttentionGather& gather = plan.gather;
  const int64_t slots = gather.columns();
  const int64_t mask_row = gather.mask_words() * 4;
  const auto mask_bytes = static_cast<std::size_t>(n * mask_row);
  if (mask_bytes > max_binding_)
    return resource_exhausted("the attention mask: " + std::to_string(mask_bytes) +
                              " bytes are past the device's largest binding "
                              "(maxStorageBufferRange = " +
                              std::to_string(max_binding_) + " bytes)");
  masked.q = p.q;
  masked.batch_k = p.batch_k;
  masked.batch_v = p.batch_v;
  masked.out = p.out;
  if (gather.in_place(p) &&
      (n <= kRecordsInPlaceQueries ||
       !vulkan::AttentionGather::segment_of(p, gather.runs().front()).device_records())) {
    // The store's own tensors, bound as they lie: nothing copied; records
    // are decoded by the attention shader as it reads them (a quarter or an
    // eighth of the bytes of f32), for a few queries: each decodes every key
    // again, where many (a prompt's chunk) do better decoding them once.
    const KVSegment& seg = vulkan::AttentionGather::segment_of(p, gather.runs().front());
    masked.cache_k = seg.k;
    masked.cache_v = seg.v;
    if (seg.device_records()) {
      records = seg.codec->record_layout(static_cast<int>(head_dim));
      if (!supports_kv_records(records))
        return invalid_argument(
            "backend vulkan: a view's device records are of a layout it does not read");
    }
  } else {
    const auto kv_bytes = static_cast<std::size_t>(kv_heads * slots * head_dim) * sizeof(float);
    auto gathered_k = scratch_buffer(kGatherKSlot, kv_bytes);
    if (!gathered_k.ok()) return gathered_k.status();
    auto gathered_v = scratch_buffer(kGatherVSlot, kv_bytes);
    if (!gathered_v.ok()) return gathered_v.status();
    masked.cache_k =
        Tensor::in_buffer(*gathered_k.value(), 0, DType::kF32, {kv_heads, slots, head_dim});
    masked.cache_v =
        Tensor::in_buffer(*gathered_v.value(), 0, DType::kF32, {kv_heads, slots, head_dim});
    RETURN_IF_ERROR(device_columns(p, gather, masked));
  }
  if (plan.mask_generation != upload_generation_) {
    // Uploaded by the first layer of its forward; reserve_uploads may submit
    // (and free the ring), so the generation is read after it.
    RETURN_IF_ERROR(reserve_uploads(mask_bytes));
    auto mask = upload(gather.mask_bits().data(), mask_bytes);
    if (!mask.ok()) return mask.status();
    plan.mask = mask.value();
    plan.mask_generation = upload_generation_;
  }
  masked.mask = Tensor::in_buffer(*plan.mask.buffer, plan.mask.offset, DType::kU8, {n, mask_row});
  return ok_status();
}

// The columns assembled on the device from p's segments, the batch and any
// host columns, then turned where they must be.
Status VulkanBackend::device_columns(const AttentionParams& p,
                                     const vulkan::AttentionGather& gather,
                                     MaskedAttentionParams& masked) {
  const int64_t head_dim = p.q.dim(2), kv_heads = p.batch_k.dim(1);
  const int64_t slots = gather.columns();
  const int64_t host_columns = gather.host_columns();
  const Tensor host_k = Tensor::contiguous(const_cast<float*>(gather.k().data()), DType::kF32,
                                           {kv_heads, host_columns, head_dim});
  const Tensor host_v = Tensor::contiguous(const_cast<float*>(gather.v().data()), DType::kF32,
                                           {kv_heads, host_columns, head_dim});
  // The runs land in disjoint columns: one barrier after all of them.
  gathering_ = true;
  Status copied = ok_status();
  for (const vulkan::AttentionGather::Run& run : gather.runs()) {
    // [kv_heads, count, head_dim] of the source -> the run's columns.
    const auto columns = [&](const Tensor& t) {
      return t.view(run.column * head_dim, {kv_heads, run.count, head_dim},
                    {slots * head_dim, head_dim, 1});
    };
    if (run.kind == vulkan::AttentionGather::Run::kSegment &&
        vulkan::AttentionGather::segment_of(p, run).device_records()) {
      // Records of the store's codec, decoded into the run's columns.
      copied = decode_run(vulkan::AttentionGather::segment_of(p, run), run.entry, run.count,
                          columns(masked.cache_k), columns(masked.cache_v));
      if (!copied.ok()) break;
      continue;
    }
    // The run's entries of a source whose entries and kv heads lie `entry`
    // and `head` floats apart, as [kv_heads, count, head_dim].
    const auto entries = [&](const Tensor& t, int64_t entry, int64_t head) {
      return t.view(run.entry * entry, {kv_heads, run.count, head_dim}, {head, entry, 1});
    };
    Tensor from_k, from_v;
    switch (run.kind) {
      case vulkan::AttentionGather::Run::kSegment: {
        const KVSegment& seg = vulkan::AttentionGather::segment_of(p, run);
        from_k = entries(seg.k, seg.k.stride[1], seg.k.stride[0]);
        from_v = entries(seg.v, seg.v.stride[1], seg.v.stride[0]);
        break;
      }
      case vulkan::AttentionGather::Run::kBatch:
        from_k = entries(p.batch_k, p.batch_k.stride[0], p.batch_k.stride[1]);
        from_v = entries(p.batch_v, p.batch_v.stride[0], p.batch_v.stride[1]);
        break;
      case vulkan::AttentionGather::Run::kHost:
        from_k = entries(host_k, head_dim, host_columns * head_dim);
        from_v = entries(host_v, head_dim, host_columns * head_dim);
        break;
    }
    copied = copy(from_k, columns(masked.cache_k));
    if (copied.ok()) copied = copy(from_v, columns(masked.cache_v));
    if (!copied.ok()) break;
  }
  gathering_ = false;
  RETURN_IF_ERROR(copied);
  commands_->barrier();
  for (const vulkan::AttentionGather::TurnRun& turned : gather.turn_runs()) {
    // The run's keys as [count, kv_heads, head_dim] rows, one position each.
    const Tensor keys =
        masked.cache_k.view(turned.column * head_dim, {turned.count, kv_heads, head_dim},
                            {head_dim, slots * head_dim, 1});
    RETURN_IF_ERROR(record_rope(keys,
                                std::span(gather.turn_positions())
                                    .subspan(static_cast<std::size_t>(turned.first),
                                             static_cast<std::size_t>(turned.count)),
                                p.rope));
  }
  return ok_status();
}

}  // namespace tessera
