#include "core/backend/backend.h"

#include <atomic>
#include <cstring>
#include <functional>
#include <string>

#include "core/compressor/compressor.h"

namespace tessera {
namespace {

// Why a tensor cannot be reached by memcpy, or ok.
Status check_host_transfer(const char* what, const Tensor& tensor, std::size_t bytes) {
  if (!tensor.on_host())
    return unimplemented(std::string("backend: ") + what + " of a " + tensor.describe() +
                         " tensor in device memory, which this backend does not implement");
  if (!tensor.is_contiguous())
    return invalid_argument(std::string("backend: ") + what + " of a non-contiguous " +
                            tensor.describe() + " tensor");
  if (bytes != tensor.bytes())
    return invalid_argument(std::string("backend: ") + what + " of " + std::to_string(bytes) +
                            " bytes into a " + tensor.describe() + " tensor of " +
                            std::to_string(tensor.bytes()) + " bytes");
  return ok_status();
}

}  // namespace

uint64_t next_visibility_id() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

std::string_view buffer_usage_name(BufferUsage usage) {
  switch (usage) {
    case BufferUsage::kWeights:
      return "weights";
    case BufferUsage::kActivations:
      return "activations";
    case BufferUsage::kKV:
      return "kv";
    case BufferUsage::kStaging:
      return "staging";
  }
  return "unknown";
}

std::string_view backend_op_name(BackendOp op) {
  switch (op) {
    case BackendOp::kEmbedding:
      return "embedding";
    case BackendOp::kMatmul:
      return "matmul";
    case BackendOp::kRmsNorm:
      return "rms_norm";
    case BackendOp::kRope:
      return "rope";
    case BackendOp::kSwiglu:
      return "swiglu";
    case BackendOp::kAdd:
      return "add";
    case BackendOp::kAddBias:
      return "add_bias";
    case BackendOp::kGeglu:
      return "geglu";
    case BackendOp::kScale:
      return "scale";
    case BackendOp::kAttention:
      return "attention";
    case BackendOp::kMaskedAttention:
      return "masked_attention";
    case BackendOp::kCacheUpdate:
      return "cache_update";
  }
  return "unknown";
}

Status Backend::write(const Tensor& dst, std::span<const std::byte> bytes) {
  RETURN_IF_ERROR(check_host_transfer("write", dst, bytes.size()));
  if (!bytes.empty()) std::memcpy(dst.data, bytes.data(), bytes.size());
  return ok_status();
}

Status Backend::read(const Tensor& src, std::span<std::byte> bytes) {
  RETURN_IF_ERROR(check_host_transfer("read", src, bytes.size()));
  if (!bytes.empty()) std::memcpy(bytes.data(), src.data, bytes.size());
  return ok_status();
}

Status check_copy_shapes(const Tensor& src, const Tensor& dst) {
  bool same = src.dtype == dst.dtype && src.rank == dst.rank;
  for (int d = 0; same && d < src.rank; ++d) same = src.dim(d) == dst.dim(d);
  // Contiguous tensors may differ in shape, as long as they hold as many elements.
  if (!same && src.dtype == dst.dtype && src.elements() == dst.elements() && src.is_contiguous() &&
      dst.is_contiguous())
    return ok_status();
  if (!same)
    return invalid_argument("backend: copy from " + src.describe() + " to " + dst.describe() +
                            ": dtypes and shapes must match (or both be contiguous with as "
                            "many elements)");
  if (src.is_contiguous() && dst.is_contiguous()) return ok_status();
  if (dtype_is_blocked(src.dtype))
    return invalid_argument("backend: copy of a strided " + src.describe() +
                            " tensor: a block format copies only contiguous");
  if (src.rank > 0 && (src.stride[static_cast<std::size_t>(src.rank - 1)] != 1 ||
                       dst.stride[static_cast<std::size_t>(dst.rank - 1)] != 1))
    return invalid_argument("backend: copy from " + src.describe() + " to " + dst.describe() +
                            ": the innermost dimension must be contiguous in both");
  return ok_status();
}

void for_each_copy_run(const Tensor& src, const Tensor& dst,
                       const std::function<void(std::size_t, std::size_t, std::size_t)>& run) {
  const std::size_t element = dtype_row_bytes(src.dtype, 1);
  if (src.is_contiguous() && dst.is_contiguous()) {
    run(0, 0, src.bytes());
    return;
  }
  const int inner = src.rank - 1;
  const auto run_bytes = static_cast<std::size_t>(src.dim(inner)) * element;
  int64_t outer = 1;
  for (int d = 0; d < inner; ++d) outer *= src.dim(d);
  for (int64_t i = 0; i < outer; ++i) {
    int64_t rest = i, from = 0, to = 0;
    for (int d = inner - 1; d >= 0; --d) {
      const int64_t index = rest % src.dim(d);
      rest /= src.dim(d);
      from += index * src.stride[static_cast<std::size_t>(d)];
      to += index * dst.stride[static_cast<std::size_t>(d)];
    }
    run(static_cast<std::size_t>(from) * element, static_cast<std::size_t>(to) * element,
        run_bytes);
  }
}

Status Backend::copy(const Tensor& src, const Tensor& dst) {
  RETURN_IF_ERROR(check_copy_shapes(src, dst));
  for (const Tensor* t : {&src, &dst})
    if (!t->on_host())
      return unimplemented("backend: copy of a " + t->describe() +
                           " tensor in device memory, which this backend does not implement");
  if (src.elements() == 0) return ok_status();
  const auto* from = static_cast<const char*>(src.data);
  auto* to = static_cast<char*>(dst.data);
  for_each_copy_run(src, dst, [&](std::size_t s, std::size_t d, std::size_t bytes) {
    std::memmove(to + d, from + s, bytes);
  });
  return ok_status();
}

bool backend_reads_records(const Backend& backend, const Compressor& codec, int heads_per_vector,
                           int head_dim) {
  // A token-wide vector spans heads the device's kernels read apart.
  return heads_per_vector == 1 && backend.supports_kv_records(codec.record_layout(head_dim));
}

bool backend_keeps_kv(const Backend& backend, const Compressor& codec, int heads_per_vector,
                      int head_dim) {
  if (backend.device_info().host_memory) return false;
  if (codec.stores_raw_f32()) return true;
  return backend_reads_records(backend, codec, heads_per_vector, head_dim) &&
         kv_record_bytes(codec.record_layout(head_dim)) ==
             codec.encoded_bytes(1, heads_per_vector * head_dim);
}

Status Backend::encode_kv(const Tensor& src, const Tensor& dst, const KVRecordLayout& layout) {
  (void)src, (void)dst, (void)layout;
  return unimplemented("backend " + device_info().name +
                       ": encode_kv (K/V records in its own memory) is not implemented");
}

Status Backend::round_trip_kv(const Tensor& src, const Tensor& dst, const KVRecordLayout& layout) {
  (void)src, (void)dst, (void)layout;
  return unimplemented("backend " + device_info().name +
                       ": round_trip_kv (K/V records in its own memory) is not implemented");
}

}  // namespace tessera
