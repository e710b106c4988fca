// K/V records on the Vulkan backend (docs/backends.md, step 5): the int8
// and int4 codecs' layouts encoded, round-tripped and decoded by
// shaders/kv_records.comp, recorded with the forward like every op.
#include <string>
#include <utility>

#include "backends/vulkan/vulkan_backend.h"
#include "backends/vulkan/vulkan_dispatch.h"
#include "core/compressor/compressor.h"

namespace tessera {
namespace {

enum Mode : int32_t { kEncode = 0, kRoundTrip = 1, kDecode = 2 };

struct KvRecordsPush {
  uint32_t n0, n1, n2, width, group;
  uint32_t src_off, s0, s1, s2;
  uint32_t dst_off, d0, d1, d2;
};

uint32_t u32(int64_t v) {
  return static_cast<uint32_t>(v);
}

// [n0, n1, n2, inner] with the innermost dimension contiguous.
bool is_vectors(const Tensor& t, DType dtype, int64_t inner) {
  return t.dtype == dtype && t.rank == 4 && t.dim(3) == inner && t.stride[3] == 1;
}

}  // namespace

bool VulkanBackend::supports_kv_records(const KVRecordLayout& layout) const {
  switch (layout.format) {
    case KVRecordFormat::kF32:
      return true;
    case KVRecordFormat::kInt8Symmetric:
      return layout.width > 0 && layout.group_size == layout.width;
    case KVRecordFormat::kInt4Symmetric:
      // The shader packs a group's codes two to a byte: groups of even size.
      return kv_record_bytes(layout) > 0 && layout.group_size % 2 == 0;
    case KVRecordFormat::kF16:
    case KVRecordFormat::kBF16:
      // No half-record shaders yet: such layers split at the codec point.
    case KVRecordFormat::kOpaque:
      break;
  }
  return false;
}

Status VulkanBackend::encode_kv(const Tensor& src, const Tensor& dst,
                                const KVRecordLayout& layout) {
  return record_kv_records(kEncode, src, dst, layout);
}

Status VulkanBackend::round_trip_kv(const Tensor& src, const Tensor& dst,
                                    const KVRecordLayout& layout) {
  return record_kv_records(kRoundTrip, src, dst, layout);
}

Status VulkanBackend::record_kv_records(int mode, const Tensor& src, const Tensor& dst,
                                        const KVRecordLayout& layout) {
  if (!device_) return failed_precondition("backend vulkan: K/V records before init()");
  if (!device_error_.ok()) return device_error_;
  const auto record = static_cast<int64_t>(kv_record_bytes(layout));
  const char* what = mode == kEncode      ? "encode_kv"
                     : mode == kRoundTrip ? "round_trip_kv"
                                          : "decode";
  if (!supports_kv_records(layout) || layout.format == KVRecordFormat::kF32)
    return invalid_argument(std::string("backend vulkan: ") + what +
                            ": no kernel for this record layout (int8, and int4 with even "
                            "groups, are the ones it has)");
  const bool records_in = mode == kDecode;
  const bool records_out = mode == kEncode;
  const Tensor& floats = records_in ? dst : src;
  if (!is_vectors(floats, DType::kF32, layout.width) ||
      !is_vectors(records_in ? src : dst, records_in || records_out ? DType::kU8 : DType::kF32,
                  records_in || records_out ? record : layout.width))
    return invalid_argument(std::string("backend vulkan: ") + what + " of " + src.describe() +
                            " into " + dst.describe() + ": the vectors must be f32 [a, b, c, " +
                            std::to_string(layout.width) + "] and the records u8 [a, b, c, " +
                            std::to_string(record) + "], innermost contiguous");
  for (int d = 0; d < 3; ++d)
    if (src.dim(d) != dst.dim(d))
      return invalid_argument(std::string("backend vulkan: ") + what + " of " + src.describe() +
                              " into " + dst.describe() + ": the outer shapes differ");
  if (src.elements() == 0) return ok_status();
  auto bound_src = bind("src", src);
  if (!bound_src.ok()) return bound_src.status();
  auto bound_dst = bind("dst", dst);
  if (!bound_dst.ok()) return bound_dst.status();
  const KvRecordsPush push{u32(src.dim(0)),         u32(src.dim(1)),        u32(src.dim(2)),
                           u32(layout.width),       u32(layout.group_size), bound_src.value().first,
                           u32(src.stride[0]),      u32(src.stride[1]),     u32(src.stride[2]),
                           bound_dst.value().first, u32(dst.stride[0]),     u32(dst.stride[1]),
                           u32(dst.stride[2])};
  const auto vectors = static_cast<uint64_t>(src.dim(0) * src.dim(1) * src.dim(2));
  const uint64_t invocations =
      mode == kDecode ? vectors * static_cast<uint64_t>(layout.width) : vectors;
  const auto variant = static_cast<int32_t>(static_cast<int>(layout.format) * 4 + mode);
  return dispatch(vulkan::Shader::kKvRecords, variant, {bound_src.value(), bound_dst.value()}, push,
                  (invocations + 63) / 64);
}

Status VulkanBackend::decode_kv(const Tensor& src, const Tensor& dst,
                                const KVRecordLayout& layout) {
  return record_kv_records(kDecode, src, dst, layout);
}

Status VulkanBackend::decode_run(const KVSegment& segment, int64_t entry, int64_t count,
                                 const Tensor& k_columns, const Tensor& v_columns) {
  const int64_t head_dim = k_columns.dim(2);
  const KVRecordLayout layout = segment.codec->record_layout(static_cast<int>(head_dim));
  if (!supports_kv_records(layout))
    return invalid_argument(
        "backend vulkan: a view's device records are of a layout it does "
        "not read");
  const std::pair<const Tensor*, const Tensor*> pairs[2] = {{&segment.k, &k_columns},
                                                            {&segment.v, &v_columns}};
  for (const auto& [records, columns] : pairs) {
    const Tensor& r = *records;
    const Tensor& c = *columns;
    // [1, kv_heads, count, bytes] -> [1, kv_heads, count, head_dim]
    RETURN_IF_ERROR(decode_kv(
        r.view(entry * r.stride[1], {1, r.dim(0), count, r.dim(2)},
               {0, r.stride[0], r.stride[1], 1}),
        c.view(0, {1, c.dim(0), count, head_dim}, {0, c.stride[0], c.stride[1], 1}), layout));
  }
  return ok_status();
}

}  // namespace tessera
