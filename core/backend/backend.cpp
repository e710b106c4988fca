#include "core/backend/backend.h"

#include <cstring>
#include <string>

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

Status Backend::copy(const Tensor& src, const Tensor& dst) {
  if (src.dtype != dst.dtype || src.elements() != dst.elements())
    return invalid_argument("backend: copy from " + src.describe() + " to " + dst.describe() +
                            ": dtypes and element counts must match");
  RETURN_IF_ERROR(check_host_transfer("copy", src, src.bytes()));
  RETURN_IF_ERROR(check_host_transfer("copy", dst, src.bytes()));
  if (src.bytes() != 0) std::memmove(dst.data, src.data, src.bytes());
  return ok_status();
}

}  // namespace tessera
