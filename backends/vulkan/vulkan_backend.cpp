#include "backends/vulkan/vulkan_backend.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>

#include "backends/vulkan/vulkan_dispatch.h"
#include "core/plugin/sdk.h"

namespace tessera {
namespace {

using vulkan::Binding;
using vulkan::kCodesSlot;
using vulkan::kCopySlot;
using vulkan::kScalesSlot;
using vulkan::kScoresSlot;
using vulkan::kScratchSlots;
using vulkan::kSumsSlot;
using vulkan::need;
using vulkan::Shader;
using vulkan::VulkanBuffer;

constexpr std::size_t kStagingBytes = std::size_t{16} << 20;   // per transfer chunk
constexpr uint64_t kLargestIndex = (uint64_t{1} << 32) - 256;  // shaders index with 32 bits
// The recording is submitted before an op once it holds this many commands,
// or before an upload that would take the ring past kUploadLimit bytes (a
// model's weights written while work is pending go in pieces).
constexpr uint64_t kMaxRecorded = 4096;
constexpr std::size_t kUploadLimit = std::size_t{64} << 20;
constexpr std::size_t kFirstUploadChunk = std::size_t{256} << 10;
constexpr std::size_t kUploadsPerOp = 4;  // alignment slack reserve_uploads adds

// elementwise.comp's OP.
constexpr int kOpAdd = 0, kOpAddBias = 1, kOpScale = 2, kOpSwiglu = 3, kOpGeglu = 4;

std::string strip_prefix(const std::string& message) {
  constexpr std::string_view kPrefix = "backend vulkan: ";
  return message.rfind(kPrefix, 0) == 0 ? message.substr(kPrefix.size()) : message;
}

// Bytes from a tensor's first element to just past its last, by its strides.
uint64_t extent_bytes(const Tensor& t) {
  if (t.elements() == 0) return 0;
  if (dtype_is_blocked(t.dtype)) {
    // Rows of whole blocks: every row but the last at its stride.
    if (t.rank <= 1) return dtype_row_bytes(t.dtype, t.elements());
    uint64_t rows_before = 0;
    for (int i = 0; i + 1 < t.rank; ++i)
      rows_before += static_cast<uint64_t>(t.shape[i] - 1) * static_cast<uint64_t>(t.stride[i]);
    return dtype_row_bytes(t.dtype, static_cast<int64_t>(rows_before)) +
           dtype_row_bytes(t.dtype, t.shape[t.rank - 1]);
  }
  uint64_t last = 0;
  for (int i = 0; i < t.rank; ++i)
    last += static_cast<uint64_t>(t.shape[i] - 1) * static_cast<uint64_t>(t.stride[i]);
  return (last + 1) * dtype_size(t.dtype);
}

uint32_t u32(int64_t v) {
  return static_cast<uint32_t>(v);
}

bool shape_is(const Tensor& t, std::initializer_list<int64_t> shape) {
  if (t.rank != static_cast<int>(shape.size())) return false;
  int i = 0;
  for (int64_t d : shape)
    if (t.shape[static_cast<std::size_t>(i++)] != d) return false;
  return true;
}

bool inner_contiguous(const Tensor& t) {
  return t.rank == 0 || t.stride[static_cast<std::size_t>(t.rank - 1)] == 1;
}

struct ElementwisePush {
  uint32_t rows, cols, a_off, a_stride, b_off, b_stride, o_off, o_stride;
  float factor;
};
struct RmsNormPush {
  uint32_t rows, d, x_off, x_stride, w_off, o_off, o_stride;
  float eps;
};
struct RopePush {
  uint32_t n, heads, head_dim, x_off, s0, s1;
};
struct EmbeddingPush {
  uint32_t n, dim, row_bytes, t_off, row_begin, row_end, o_off, o_stride;
};
struct QuantizePush {
  uint32_t n, k, x_off, x_stride;
};
struct MatmulFloatPush {
  uint32_t n, k, rows, row_begin, row_bytes, w_off, x_off, x_stride, o_off, o_stride;
};
struct MatmulQuantPush {
  uint32_t n, k, rows, row_begin, row_bytes, w_off, o_off, o_stride;
};
struct MaskedAttentionPush {
  uint32_t n, heads, kv_heads, head_dim, slots;
  uint32_t q_off, q_s0, q_s1, ck_off, ck_s0, ck_s1, cv_off, cv_s0, cv_s1;
  uint32_t bk_off, bk_s0, bk_s1, bv_off, bv_s0, bv_s1, m_off, m_s0, o_off, o_s0, o_s1;
  float scale;
  uint32_t group;
};
struct CacheUpdatePush {
  uint32_t kv_heads, slots, head_dim, n, c_off, c_s0, c_s1, k_off, i_off, i_s0, r_off, r_s0, r_s1;
};
static_assert(sizeof(MaskedAttentionPush) <= vulkan::kMaxPushBytes);

}  // namespace

// ---- creation ----

VulkanBackend::VulkanBackend(const OptionValues& options) {
  const Status status = open(options.get_string("device"));
  if (!status.ok()) throw sdk::Refusal(status);
}

Result<std::unique_ptr<VulkanBackend>> VulkanBackend::create(const std::string& device) {
  std::unique_ptr<VulkanBackend> backend(new VulkanBackend());
  RETURN_IF_ERROR(backend->open(device));
  return backend;
}

VulkanBackend::~VulkanBackend() {
  // What was recorded runs (it may write buffers that outlive the backend).
  if (commands_) static_cast<void>(flush());
  if (commands_ && std::getenv("TESSERA_VULKAN_STATS") != nullptr)
    std::fprintf(stderr, "backend vulkan: %llu submissions, %llu commands recorded\n",
                 static_cast<unsigned long long>(submissions()),
                 static_cast<unsigned long long>(commands_recorded()));
  // Everything that holds the device goes before it.
  weights_.clear();
  scratch_.clear();
  upload_chunks_.clear();
  staging_.reset();
  pipelines_.reset();
  commands_.reset();
}

Status VulkanBackend::open(const std::string& device) {
  auto instance = vulkan::Instance::create();
  if (!instance.ok()) return instance.status();
  instance_ = std::move(instance).value();
  auto devices = vulkan::enumerate_devices(*instance_);
  if (!devices.ok()) return devices.status();
  physical_ = std::move(devices).value();
  auto chosen = vulkan::choose_device(physical_, device);
  if (!chosen.ok()) return chosen.status();
  chosen_ = chosen.value();
  return ok_status();
}

Status VulkanBackend::init(const BackendOptions& /*options*/) {
  if (device_) return ok_status();  // again: the same device
  const vulkan::PhysicalDevice& physical = physical_[chosen_];
  auto device = vulkan::Device::create(instance_, physical);
  if (!device.ok()) return device.status();
  device_ = std::shared_ptr<const vulkan::Device>(std::move(device).value());
  retirement_ = std::make_shared<vulkan::Retirement>(device_);
  auto commands = vulkan::Commands::create(device_, retirement_);
  if (!commands.ok()) return commands.status();
  commands_ = std::move(commands).value();
  pipelines_ = std::make_unique<vulkan::Pipelines>(device_);
  max_binding_ = std::min<uint64_t>(physical.info.max_binding_bytes, kLargestIndex);
  alignment_ = physical.min_storage_offset_alignment;
  scratch_.resize(kScratchSlots);
  return ok_status();
}

DeviceInfo VulkanBackend::device_info() const {
  vulkan::PhysicalDevice now = physical_[chosen_];
  vulkan::query_memory(*instance_, now);  // free memory changes
  now.info.description += ", " + std::to_string(submissions()) + " submissions";
  return now.info;
}

uint64_t VulkanBackend::submissions() const {
  return commands_ ? commands_->submissions() : 0;
}

uint64_t VulkanBackend::commands_recorded() const {
  // A submitted recording is in commands_total_ already (its count is reset
  // only when the next one begins).
  return commands_total_ + (commands_ && commands_->recording() ? commands_->recorded() : 0);
}

std::vector<DeviceInfo> VulkanBackend::devices() const {
  std::vector<DeviceInfo> infos;
  for (const auto& d : physical_) infos.push_back(d.info);
  return infos;
}

bool VulkanBackend::supports_weight_dtype(DType dtype) const {
  for (const DType known : kAllDTypes)
    if (dtype == known) return true;
  return false;
}

Result<std::unique_ptr<Buffer>> VulkanBackend::allocate(std::size_t bytes, BufferUsage usage) {
  if (!device_) return failed_precondition("backend vulkan: allocate before init()");
  auto buffer = VulkanBuffer::create(device_, bytes, usage, /*host_visible=*/false, retirement_);
  if (!buffer.ok()) return buffer.status();
  return std::unique_ptr<Buffer>(std::move(buffer).value());
}

// ---- transfers ----

Result<VulkanBuffer*> VulkanBackend::device_buffer(const char* name, const Tensor& t) const {
  if (t.data != nullptr || t.buffer == nullptr)
    return invalid_argument(std::string(name) + " " + t.describe() +
                            " is in host memory; a Vulkan op needs tensors in buffers this "
                            "backend allocated (Tensor::in_buffer)");
  auto* buffer = dynamic_cast<VulkanBuffer*>(t.buffer);
  if (buffer == nullptr || &buffer->device() != device_.get())
    return invalid_argument(std::string(name) + " " + t.describe() +
                            " is in a buffer another backend allocated");
  return buffer;
}

Status VulkanBackend::write_bytes(VulkanBuffer& buffer, std::size_t offset, const std::byte* host,
                                  std::size_t bytes) {
  RETURN_IF_ERROR(device_error_);
  for (std::size_t done = 0; done < bytes;) {
    const std::size_t chunk = std::min(kStagingBytes, bytes - done);
    // Straight in when nothing recorded may read or write it first.
    if (commands_->recording()) RETURN_IF_ERROR(reserve_uploads(chunk));  // may submit
    if (!commands_->recording() && buffer.mapped() != nullptr) {
      std::memcpy(buffer.mapped() + offset + done, host + done, chunk);
      done += chunk;
      continue;
    }
    RETURN_IF_ERROR(reserve_uploads(chunk));
    auto up = upload(host + done, chunk);
    if (!up.ok()) return up.status();
    RETURN_IF_ERROR(commands_->record_copy(up.value().buffer->handle(), up.value().offset,
                                           buffer.handle(), offset + done, chunk));
    done += chunk;
  }
  return ok_status();
}

Status VulkanBackend::read_bytes(VulkanBuffer& buffer, std::size_t offset, std::byte* host,
                                 std::size_t bytes) {
  RETURN_IF_ERROR(flush());
  if (bytes == 0) return ok_status();
  if (buffer.mapped() != nullptr && buffer.host_cached()) {
    std::memcpy(host, buffer.mapped() + offset, bytes);
    return ok_status();
  }
  if (!staging_) {
    auto staging =
        VulkanBuffer::create(device_, kStagingBytes, BufferUsage::kStaging, true, retirement_);
    if (!staging.ok()) return staging.status();
    staging_ = std::move(staging).value();
  }
  for (std::size_t done = 0; done < bytes;) {
    const std::size_t chunk = std::min(kStagingBytes, bytes - done);
    RETURN_IF_ERROR(
        commands_->record_copy(buffer.handle(), offset + done, staging_->handle(), 0, chunk));
    RETURN_IF_ERROR(flush());
    std::memcpy(host + done, staging_->mapped(), chunk);
    done += chunk;
  }
  return ok_status();
}

Status VulkanBackend::write(const Tensor& dst, std::span<const std::byte> bytes) {
  if (dst.on_host()) return Backend::write(dst, bytes);
  if (!device_) return failed_precondition("backend vulkan: write before init()");
  auto buffer = device_buffer("write: dst", dst);
  if (!buffer.ok()) return buffer.status().with_context("backend vulkan");
  RETURN_IF_ERROR(need(dst.is_contiguous(),
                       "backend vulkan: write of a non-contiguous " + dst.describe() + " tensor"));
  RETURN_IF_ERROR(
      need(bytes.size() == dst.bytes(), "backend vulkan: write of " + std::to_string(bytes.size()) +
                                            " bytes into a " + dst.describe() + " tensor of " +
                                            std::to_string(dst.bytes()) + " bytes"));
  RETURN_IF_ERROR(need(dst.offset + bytes.size() <= buffer.value()->size(),
                       "backend vulkan: write past the end of its buffer"));
  return write_bytes(*buffer.value(), dst.offset, bytes.data(), bytes.size());
}

Status VulkanBackend::read(const Tensor& src, std::span<std::byte> bytes) {
  if (src.on_host()) return Backend::read(src, bytes);
  if (!device_) return failed_precondition("backend vulkan: read before init()");
  auto buffer = device_buffer("read: src", src);
  if (!buffer.ok()) return buffer.status().with_context("backend vulkan");
  RETURN_IF_ERROR(need(src.is_contiguous(),
                       "backend vulkan: read of a non-contiguous " + src.describe() + " tensor"));
  RETURN_IF_ERROR(
      need(bytes.size() == src.bytes(), "backend vulkan: read of " + std::to_string(bytes.size()) +
                                            " bytes from a " + src.describe() + " tensor of " +
                                            std::to_string(src.bytes()) + " bytes"));
  RETURN_IF_ERROR(need(src.offset + bytes.size() <= buffer.value()->size(),
                       "backend vulkan: read past the end of its buffer"));
  return read_bytes(*buffer.value(), src.offset, bytes.data(), bytes.size());
}

Status VulkanBackend::copy(const Tensor& src, const Tensor& dst) {
  if (src.on_host() && dst.on_host()) return Backend::copy(src, dst);
  RETURN_IF_ERROR(check_copy_shapes(src, dst).with_context("backend vulkan"));
  if (!device_) return failed_precondition("backend vulkan: copy before init()");
  if (src.elements() == 0) return ok_status();
  if (src.is_contiguous() && dst.is_contiguous()) {
    const std::size_t bytes = src.bytes();
    if (src.on_host()) return write(dst, {static_cast<const std::byte*>(src.data), bytes});
    if (dst.on_host()) return read(src, {static_cast<std::byte*>(dst.data), bytes});
  }
  // The runs each side moves, relative to each tensor's first byte.
  std::vector<VkBufferCopy>& runs = copy_runs_;
  runs.clear();
  std::size_t packed = 0;
  for_each_copy_run(src, dst, [&](std::size_t from, std::size_t to, std::size_t bytes) {
    runs.push_back({from, to, bytes});
    packed += bytes;
  });
  RETURN_IF_ERROR(device_error_);
  if (commands_->recorded() >= kMaxRecorded) RETURN_IF_ERROR(flush());
  if (src.on_host()) {
    // Strided host -> device: packed in run order into the ring, then one
    // recorded copy scatters the runs.
    RETURN_IF_ERROR(reserve_uploads(packed));
    auto up = upload(nullptr, packed);
    if (!up.ok()) return up.status();
    std::byte* ring = up.value().buffer->mapped() + up.value().offset;
    std::size_t at = 0;
    for (VkBufferCopy& run : runs) {
      std::memcpy(ring + at, static_cast<const std::byte*>(src.data) + run.srcOffset, run.size);
      run.srcOffset = up.value().offset + at;
      at += run.size;
    }
    auto to = device_buffer("copy: dst", dst);
    if (!to.ok()) return to.status().with_context("backend vulkan");
    RETURN_IF_ERROR(within(dst, *to.value(), runs, false));
    for (VkBufferCopy& run : runs) run.dstOffset += dst.offset;
    return commands_->record_copy_regions(up.value().buffer->handle(), to.value()->handle(), runs,
                                          !gathering_);
  }
  auto from = device_buffer("copy: src", src);
  if (!from.ok()) return from.status().with_context("backend vulkan");
  RETURN_IF_ERROR(within(src, *from.value(), runs, true));
  for (VkBufferCopy& run : runs) run.srcOffset += src.offset;
  if (dst.on_host()) {
    // Strided device -> host: gathered packed into scratch, read, scattered.
    auto packed_buffer = scratch_buffer(kCopySlot, packed);
    if (!packed_buffer.ok()) return packed_buffer.status();
    std::vector<std::size_t> host_offsets;
    host_offsets.reserve(runs.size());
    std::size_t at = 0;
    for (VkBufferCopy& run : runs) {
      host_offsets.push_back(run.dstOffset);
      run.dstOffset = at;
      at += run.size;
    }
    RETURN_IF_ERROR(commands_->record_copy_regions(from.value()->handle(),
                                                   packed_buffer.value()->handle(), runs));
    std::vector<std::byte> host(packed);
    RETURN_IF_ERROR(read_bytes(*packed_buffer.value(), 0, host.data(), packed));
    for (std::size_t r = 0; r < runs.size(); ++r)
      std::memcpy(static_cast<std::byte*>(dst.data) + host_offsets[r],
                  host.data() + runs[r].dstOffset, runs[r].size);
    return ok_status();
  }
  auto to = device_buffer("copy: dst", dst);
  if (!to.ok()) return to.status().with_context("backend vulkan");
  RETURN_IF_ERROR(within(dst, *to.value(), runs, false));
  for (VkBufferCopy& run : runs) run.dstOffset += dst.offset;
  return commands_->record_copy_regions(from.value()->handle(), to.value()->handle(), runs,
                                        !gathering_);
}

Status VulkanBackend::within(const Tensor& t, const vulkan::VulkanBuffer& buffer,
                             std::span<const VkBufferCopy> runs, bool source) const {
  std::size_t end = 0;
  for (const VkBufferCopy& run : runs)
    end = std::max<std::size_t>(end, (source ? run.srcOffset : run.dstOffset) + run.size);
  if (t.offset + end > buffer.size())
    return invalid_argument("backend vulkan: copy " + std::string(source ? "from" : "to") + " " +
                            t.describe() + " at byte " + std::to_string(t.offset) +
                            " runs past its buffer of " + std::to_string(buffer.size()) + " bytes");
  return ok_status();
}

Status VulkanBackend::flush() {
  RETURN_IF_ERROR(device_error_);
  if (!commands_->recording()) return ok_status();
  commands_total_ += commands_->recorded();
  const Status status = commands_->submit();
  if (!status.ok()) {
    device_error_ =
        Status(status.code(), "backend vulkan: running the recorded work: " +
                                  strip_prefix(status.message()) + "; every later op is skipped");
    return device_error_;
  }
  // The ring is free again: the last (largest) chunk is kept for the next
  // submission, the others freed.
  if (upload_chunks_.size() > 1)
    upload_chunks_.erase(upload_chunks_.begin(), upload_chunks_.end() - 1);
  upload_used_ = 0;
  upload_total_ = 0;
  ++upload_generation_;  // what attention's plans uploaded is gone
  return ok_status();
}

Status VulkanBackend::synchronize() {
  if (!device_) return ok_status();
  const Status ran = flush();
  if (!ran.ok()) return ran;
  Status status = error_;
  if (!status.ok() && later_errors_ > 0)
    status =
        Status(status.code(), status.message() + " (and " + std::to_string(later_errors_) +
                                  " more failed op" + (later_errors_ == 1 ? "" : "s") + " since)");
  error_ = ok_status();
  later_errors_ = 0;
  return status;
}

// ---- recording helpers ----

Result<VulkanBackend::Bound> VulkanBackend::bind(const char* name, const Tensor& t) const {
  auto buffer = device_buffer(name, t);
  if (!buffer.ok()) return buffer.status();
  // Bytes (K/V records) are addressed by byte; everything else by word.
  if (t.offset % 4 != 0 && t.dtype != DType::kU8)
    return invalid_argument(std::string(name) + " " + t.describe() + " starts at byte " +
                            std::to_string(t.offset) + ", not a multiple of 4");
  if (!inner_contiguous(t))
    return invalid_argument(std::string(name) + " " + t.describe() +
                            " has a strided innermost dimension");
  const uint64_t extent = extent_bytes(t);
  if (t.offset + extent > buffer.value()->size())
    return invalid_argument(std::string(name) + " " + t.describe() + " at byte " +
                            std::to_string(t.offset) + " runs past its buffer of " +
                            std::to_string(buffer.value()->size()) + " bytes");
  Bound bound;
  const uint64_t aligned = t.offset / alignment_ * alignment_;
  bound.binding.buffer = buffer.value()->handle();
  bound.binding.offset = aligned;
  bound.binding.range = std::max<uint64_t>((t.offset - aligned + extent + 3) / 4 * 4, 4);
  if (bound.binding.range > max_binding_)
    return invalid_argument(std::string(name) + " " + t.describe() + " spans " +
                            std::to_string(bound.binding.range) +
                            " bytes, past the device's largest binding (maxStorageBufferRange "
                            "= " +
                            std::to_string(max_binding_) + " bytes)");
  const uint64_t first = t.offset - aligned;
  bound.first = static_cast<uint32_t>(
      dtype_is_blocked(t.dtype) || t.dtype != DType::kF32 ? first : first / 4);
  return bound;
}

Result<VulkanBuffer*> VulkanBackend::scratch_buffer(int slot, std::size_t bytes) {
  bytes = std::max<std::size_t>((bytes + 3) / 4 * 4, 4);
  if (bytes > max_binding_)
    return resource_exhausted("scratch of " + std::to_string(bytes) +
                              " bytes is past the device's largest binding "
                              "(maxStorageBufferRange = " +
                              std::to_string(max_binding_) + " bytes)");
  auto& buffer = scratch_[static_cast<std::size_t>(slot)];
  if (!buffer || buffer->size() < bytes) {
    // At least twice what it had (up to the largest binding), so a context
    // that lengthens by a token a step seldom reallocates it.
    const std::size_t doubled = buffer ? static_cast<std::size_t>(std::min<uint64_t>(
                                             max_binding_, uint64_t{2} * buffer->size()))
                                       : 0;
    buffer.reset();
    auto made = VulkanBuffer::create(device_, std::max({bytes, std::size_t{4096}, doubled}),
                                     BufferUsage::kActivations, false, retirement_);
    if (!made.ok() && doubled > bytes)  // no room to double: what is asked, exactly
      made = VulkanBuffer::create(device_, std::max(bytes, std::size_t{4096}),
                                  BufferUsage::kActivations, false, retirement_);
    if (!made.ok()) return made.status();
    buffer = std::move(made).value();
  }
  return buffer.get();
}

Result<VulkanBackend::Bound> VulkanBackend::bind_scratch(int slot, std::size_t bytes) {
  auto buffer = scratch_buffer(slot, bytes);
  if (!buffer.ok()) return buffer.status();
  Bound bound;
  bound.binding = {buffer.value()->handle(), 0, std::max<std::size_t>((bytes + 3) / 4 * 4, 4)};
  return bound;
}

Status VulkanBackend::reserve_uploads(std::size_t bytes) {
  const std::size_t needed = bytes + kUploadsPerOp * (alignment_ + 4);
  if (commands_->recording() && upload_total_ + needed > kUploadLimit) RETURN_IF_ERROR(flush());
  const std::size_t at = (upload_used_ + alignment_ - 1) / alignment_ * alignment_;
  if (!upload_chunks_.empty() && at + needed <= upload_chunks_.back()->size()) return ok_status();
  // A new chunk: the full ones stay until the submission that reads them
  // finished.
  const std::size_t last = upload_chunks_.empty() ? 0 : upload_chunks_.back()->size();
  const std::size_t size = std::max({needed, kFirstUploadChunk, std::min(2 * last, kUploadLimit)});
  auto made = VulkanBuffer::create(device_, size, BufferUsage::kStaging, true, retirement_);
  if (!made.ok()) return made.status().with_context("the upload ring");
  upload_chunks_.push_back(std::move(made).value());
  upload_used_ = 0;
  return ok_status();
}

Result<VulkanBackend::Upload> VulkanBackend::upload(const void* data, std::size_t bytes) {
  const std::size_t at = (upload_used_ + alignment_ - 1) / alignment_ * alignment_;
  const std::size_t range = std::max<std::size_t>((bytes + 3) / 4 * 4, 4);
  if (upload_chunks_.empty() || at + range > upload_chunks_.back()->size())
    return internal_error("upload of " + std::to_string(bytes) + " bytes past what was reserved");
  VulkanBuffer* chunk = upload_chunks_.back().get();
  if (bytes > 0 && data != nullptr) std::memcpy(chunk->mapped() + at, data, bytes);
  upload_total_ += at + range - upload_used_;
  upload_used_ = at + range;
  Upload up;
  up.buffer = chunk;
  up.offset = at;
  up.bound.binding = {chunk->handle(), at, range};
  return up;
}

template <typename Record>
void VulkanBackend::run(const char* op, std::initializer_list<const Tensor*> tensors,
                        Record&& record) {
  if (!device_) {
    fail(op, tensors, failed_precondition("the backend was not initialised (init())"));
    return;
  }
  if (!device_error_.ok()) return;  // synchronize() returns it
  if (commands_->recorded() >= kMaxRecorded && !flush().ok()) return;
  // A failure half-way leaves what the op recorded so far: valid commands
  // whose output the error disowns.
  const Status status = record();
  if (!status.ok()) fail(op, tensors, status);
}

void VulkanBackend::fail(const char* op, std::initializer_list<const Tensor*> tensors,
                         const Status& status) {
  if (!error_.ok()) {
    ++later_errors_;
    return;
  }
  std::string what = std::string("backend vulkan: ") + op + "(";
  bool first = true;
  for (const Tensor* t : tensors) {
    what += (first ? "" : ", ") + t->describe();
    first = false;
  }
  error_ = Status(status.code(), what + "): " + strip_prefix(status.message()));
}

// ---- ops ----

Status VulkanBackend::record_elementwise(int op, const Tensor& a, const Tensor* b, float factor,
                                         const Tensor& out) {
  for (const Tensor* t : {&a, b, &out})
    if (t != nullptr && t->dtype != DType::kF32)
      return invalid_argument("tensors must be f32, not " + t->describe());
  ElementwisePush push{};
  push.factor = factor;
  if (op == kOpAddBias) {
    RETURN_IF_ERROR(
        need(a.rank == 2 && shape_is(out, {a.dim(0), a.dim(1)}) && b->elements() == a.dim(1),
             "x and out must be [n, d] and bias [d]"));
    RETURN_IF_ERROR(need(b->is_contiguous(), "bias must be contiguous"));
    push.rows = u32(a.dim(0));
    push.cols = u32(a.dim(1));
    push.a_stride = u32(a.stride[0]);
    push.o_stride = u32(out.stride[0]);
  } else {
    const int64_t count = out.elements();
    RETURN_IF_ERROR(need(a.elements() == count && (b == nullptr || b->elements() == count),
                         "the tensors must have one size"));
    RETURN_IF_ERROR(
        need(a.is_contiguous() && out.is_contiguous() && (b == nullptr || b->is_contiguous()),
             "the tensors must be contiguous"));
    push.rows = 1;
    push.cols = u32(count);
  }
  if (push.rows == 0 || push.cols == 0) return ok_status();
  auto ba = bind("a", a);
  if (!ba.ok()) return ba.status();
  auto bo = bind("out", out);
  if (!bo.ok()) return bo.status();
  Bound bb = ba.value();  // unused by scale: any valid binding
  if (b != nullptr) {
    auto bound = bind("b", *b);
    if (!bound.ok()) return bound.status();
    bb = bound.value();
  }
  push.a_off = ba.value().first;
  push.b_off = bb.first;
  push.o_off = bo.value().first;
  return dispatch(Shader::kElementwise, op, {ba.value(), bb, bo.value()}, push,
                  (uint64_t{push.rows} * push.cols + 255) / 256);
}

void VulkanBackend::add(const Tensor& a, const Tensor& b, const Tensor& out) {
  run("add", {&a, &b, &out}, [&] { return record_elementwise(kOpAdd, a, &b, 0.0f, out); });
}

void VulkanBackend::add_bias(const Tensor& x, const Tensor& bias, const Tensor& out) {
  run("add_bias", {&x, &bias, &out},
      [&] { return record_elementwise(kOpAddBias, x, &bias, 0.0f, out); });
}

void VulkanBackend::scale(const Tensor& x, float factor, const Tensor& out) {
  run("scale", {&x, &out}, [&] { return record_elementwise(kOpScale, x, nullptr, factor, out); });
}

void VulkanBackend::swiglu(const Tensor& gate, const Tensor& up, const Tensor& out) {
  run("swiglu", {&gate, &up, &out},
      [&] { return record_elementwise(kOpSwiglu, gate, &up, 0.0f, out); });
}

void VulkanBackend::geglu(const Tensor& gate, const Tensor& up, const Tensor& out) {
  run("geglu", {&gate, &up, &out},
      [&] { return record_elementwise(kOpGeglu, gate, &up, 0.0f, out); });
}

void VulkanBackend::rms_norm(const Tensor& x, const Tensor& weight, float eps, const Tensor& out) {
  run("rms_norm", {&x, &weight, &out}, [&]() -> Status {
    RETURN_IF_ERROR(
        need(x.dtype == DType::kF32 && weight.dtype == DType::kF32 && out.dtype == DType::kF32,
             "tensors must be f32"));
    RETURN_IF_ERROR(need(x.rank == 2 && shape_is(out, {x.dim(0), x.dim(1)}) &&
                             weight.elements() == x.dim(1) && weight.is_contiguous(),
                         "x and out must be [n, d] and weight [d]"));
    if (x.elements() == 0) return ok_status();
    auto bx = bind("x", x);
    if (!bx.ok()) return bx.status();
    auto bw = bind("weight", weight);
    if (!bw.ok()) return bw.status();
    auto bo = bind("out", out);
    if (!bo.ok()) return bo.status();
    const RmsNormPush push{u32(x.dim(0)),    u32(x.dim(1)),    bx.value().first,   u32(x.stride[0]),
                           bw.value().first, bo.value().first, u32(out.stride[0]), eps};
    return dispatch(Shader::kRmsNorm, 0, {bx.value(), bw.value(), bo.value()}, push,
                    static_cast<uint64_t>(x.dim(0)));
  });
}

void VulkanBackend::rope(const Tensor& x, std::span<const int32_t> positions,
                         const RopeSpec& rope) {
  run("rope", {&x}, [&] { return record_rope(x, positions, rope); });
}

Status VulkanBackend::record_rope(const Tensor& x, std::span<const int32_t> positions,
                                  const RopeSpec& rope) {
  RETURN_IF_ERROR(
      need(x.dtype == DType::kF32 && x.rank == 3, "x must be f32 [n, heads, head_dim]"));
  const int64_t n = x.dim(0), heads = x.dim(1), head_dim = x.dim(2), pairs = head_dim / 2;
  RETURN_IF_ERROR(need(head_dim % 2 == 0, "head_dim must be even"));
  RETURN_IF_ERROR(
      need(static_cast<int64_t>(positions.size()) == n,
           std::to_string(positions.size()) + " positions for " + std::to_string(n) + " tokens"));
  RETURN_IF_ERROR(
      need(rope.freq_factors.empty() || static_cast<int64_t>(rope.freq_factors.size()) == pairs,
           "freq_factors must have head_dim / 2 entries"));
  if (x.elements() == 0) return ok_status();
  auto bx = bind("x", x);
  if (!bx.ok()) return bx.status();
  auto angles = rope_angles(positions, rope, head_dim);
  if (!angles.ok()) return angles.status();
  const RopePush push{u32(n),           u32(heads),       u32(head_dim),
                      bx.value().first, u32(x.stride[0]), u32(x.stride[1])};
  return dispatch(Shader::kRope, rope.pairs == RopePairs::kHalves ? 1 : 0,
                  {bx.value(), angles.value().bound}, push,
                  (static_cast<uint64_t>(n * heads * pairs) + 255) / 256);
}

Result<VulkanBackend::Upload> VulkanBackend::rope_angles(std::span<const int32_t> positions,
                                                         const RopeSpec& rope, int64_t head_dim) {
  const auto holds = [&](const RopeAngles& t) {
    return t.generation == upload_generation_ && t.head_dim == head_dim &&
           same_rope(t.rope, rope) &&
           std::equal(t.positions.begin(), t.positions.end(), positions.begin(), positions.end());
  };
  RopeAngles* slot = &rope_tables_[0];
  for (RopeAngles& t : rope_tables_) {
    if (holds(t)) {
      t.last_used = ++rope_clock_;
      return t.uploaded;
    }
    if (t.last_used < slot->last_used) slot = &t;
  }
  // The angles on the host (the CPU's expressions).
  const int64_t n = static_cast<int64_t>(positions.size()), pairs = head_dim / 2;
  std::vector<float>& cs = rope_cs_;
  cs.resize(static_cast<std::size_t>(n * pairs * 2));
  for (int64_t t = 0; t < n; ++t)
    for (int64_t pair = 0; pair < pairs; ++pair) {
      float* at = cs.data() + (t * pairs + pair) * 2;
      rope_cos_sin(positions[static_cast<std::size_t>(t)], pair, head_dim, rope, at[0], at[1]);
    }
  // reserve_uploads may submit (and free the ring), so the generation is
  // read after it.
  RETURN_IF_ERROR(reserve_uploads(cs.size() * sizeof(float)));
  auto up = upload(cs.data(), cs.size() * sizeof(float));
  if (!up.ok()) return up.status();
  slot->positions.assign(positions.begin(), positions.end());
  slot->factors.assign(rope.freq_factors.begin(), rope.freq_factors.end());
  slot->rope = rope;
  slot->rope.freq_factors = slot->factors;
  slot->head_dim = head_dim;
  slot->uploaded = up.value();
  slot->generation = upload_generation_;
  slot->last_used = ++rope_clock_;
  ++rope_tables_uploaded_;
  return up;
}

Status VulkanBackend::record_embedding(const Tensor& table, std::span<const int32_t> tokens,
                                       const Tensor& out) {
  const int64_t n = static_cast<int64_t>(tokens.size());
  RETURN_IF_ERROR(need(supports_weight_dtype(table.dtype), "no kernel for this table dtype"));
  RETURN_IF_ERROR(
      need(table.rank == 2 && out.dtype == DType::kF32 && shape_is(out, {n, table.dim(1)}),
           "table must be [vocab, dim] and out f32 [tokens, dim]"));
  const int64_t vocab = table.dim(0), dim = table.dim(1);
  RETURN_IF_ERROR(need(dim % dtype_layout(table.dtype).block_elements == 0,
                       "dim is not a whole number of blocks"));
  for (int32_t token : tokens)
    if (token < 0 || token >= vocab)
      return out_of_range("token " + std::to_string(token) + " is outside the table's " +
                          std::to_string(vocab) + " rows");
  if (n == 0 || dim == 0) return ok_status();
  auto buffer = device_buffer("table", table);
  if (!buffer.ok()) return buffer.status();
  auto bo = bind("out", out);
  if (!bo.ok()) return bo.status();
  RETURN_IF_ERROR(reserve_uploads(tokens.size() * sizeof(int32_t)));
  auto bt = upload(tokens.data(), tokens.size() * sizeof(int32_t));
  if (!bt.ok()) return bt.status();
  // The table in pieces of rows that each fit one binding.
  const uint64_t row_bytes = dtype_row_bytes(table.dtype, table.stride[0]);
  const uint64_t last_row = dtype_row_bytes(table.dtype, dim);
  RETURN_IF_ERROR(need(table.offset % 4 == 0, "the table must start at a multiple of 4 bytes"));
  RETURN_IF_ERROR(need(table.offset + (vocab - 1) * row_bytes + last_row <= buffer.value()->size(),
                       "the table runs past its buffer"));
  const uint64_t slack = alignment_ + 4;
  if (last_row + slack > max_binding_)
    return invalid_argument("a row of " + std::to_string(last_row) +
                            " bytes is past the device's largest binding (maxStorageBufferRange "
                            "= " +
                            std::to_string(max_binding_) + " bytes)");
  const int64_t per_piece = static_cast<int64_t>(
      std::max<uint64_t>(1, (max_binding_ - slack - last_row) / row_bytes + 1));
  for (int64_t r0 = 0; r0 < vocab; r0 += per_piece) {
    const int64_t rows = std::min(per_piece, vocab - r0);
    const uint64_t start = table.offset + static_cast<uint64_t>(r0) * row_bytes;
    const uint64_t aligned = start / alignment_ * alignment_;
    Bound piece;
    piece.binding = {buffer.value()->handle(), aligned,
                     (start - aligned + (rows - 1) * row_bytes + last_row + 3) / 4 * 4};
    const EmbeddingPush push{u32(n),  u32(dim),       u32(row_bytes),   u32(start - aligned),
                             u32(r0), u32(r0 + rows), bo.value().first, u32(out.stride[0])};
    RETURN_IF_ERROR(dispatch(Shader::kEmbedding, static_cast<int32_t>(table.dtype),
                             {piece, bt.value().bound, bo.value()}, push,
                             (static_cast<uint64_t>(n * dim) + 255) / 256));
  }
  return ok_status();
}

void VulkanBackend::embedding(const Tensor& table, std::span<const int32_t> tokens,
                              const Tensor& out) {
  run("embedding", {&table, &out}, [&] { return record_embedding(table, tokens, out); });
}

Status VulkanBackend::record_matmul(const Tensor& x, const Tensor& w, const Tensor& out) {
  RETURN_IF_ERROR(need(supports_weight_dtype(w.dtype), "no kernel for this weight dtype"));
  RETURN_IF_ERROR(need(x.dtype == DType::kF32 && out.dtype == DType::kF32 && x.rank == 2 &&
                           w.rank == 2 && w.dim(1) == x.dim(1) &&
                           shape_is(out, {x.dim(0), w.dim(0)}),
                       "x must be f32 [n, k], w [m, k] and out f32 [n, m]"));
  const int64_t n = x.dim(0), k = x.dim(1), m = w.dim(0);
  const bool quantised = dtype_is_blocked(w.dtype);
  const int64_t block = dtype_layout(w.dtype).block_elements;
  RETURN_IF_ERROR(need(k % block == 0, "k = " + std::to_string(k) + " is not a whole number of " +
                                           std::to_string(block) + "-element blocks"));
  if (n == 0 || m == 0) return ok_status();
  auto bx = bind("x", x);
  if (!bx.ok()) return bx.status();
  auto bo = bind("out", out);
  if (!bo.ok()) return bo.status();
  auto buffer = device_buffer("w", w);
  if (!buffer.ok()) return buffer.status();
  const uint64_t row_bytes = dtype_row_bytes(w.dtype, w.stride[0]);
  const uint64_t last_row = dtype_row_bytes(w.dtype, k);
  RETURN_IF_ERROR(need(w.offset % 4 == 0, "w must start at a multiple of 4 bytes"));
  RETURN_IF_ERROR(need(w.offset + (m - 1) * row_bytes + last_row <= buffer.value()->size(),
                       "w runs past its buffer"));

  Bound codes, scales, sums;
  if (quantised) {
    // The activations to 8-bit blocks once, for every row of w.
    const bool super = block == 256;
    auto c = bind_scratch(kCodesSlot, static_cast<std::size_t>(n * k));
    if (!c.ok()) return c.status();
    auto s = bind_scratch(kScalesSlot, static_cast<std::size_t>(n * (k / block)) * 4);
    if (!s.ok()) return s.status();
    auto u = bind_scratch(kSumsSlot, static_cast<std::size_t>(n * (k / 32)) * 4);
    if (!u.ok()) return u.status();
    codes = c.value();
    scales = s.value();
    sums = u.value();
    const QuantizePush push{u32(n), u32(k), bx.value().first, u32(x.stride[0])};
    RETURN_IF_ERROR(dispatch(Shader::kQuantizeQ8, super ? 1 : 0, {bx.value(), codes, scales, sums},
                             push, (static_cast<uint64_t>(n * (k / 32)) + 63) / 64));
  }
  // w in pieces of rows that each fit one binding.
  const uint64_t slack = alignment_ + 4;
  if (last_row + slack > max_binding_)
    return invalid_argument("a row of w of " + std::to_string(last_row) +
                            " bytes is past the device's largest binding "
                            "(maxStorageBufferRange = " +
                            std::to_string(max_binding_) + " bytes)");
  const int64_t per_piece = static_cast<int64_t>(
      std::max<uint64_t>(1, (max_binding_ - slack - last_row) / row_bytes + 1));
  constexpr int64_t kTile = 8;           // tokens per workgroup (the shaders' TILE)
  constexpr int64_t kRowsPerGroup = 64;  // rows per workgroup in the per-row modes (RPW)
  // CPU devices (lavapipe) run the per-row modes where rows are long
  // (k >= kPerRowMinK): one invocation per weight row, one token per
  // workgroup for a single token, TILE otherwise. The choice depends on w
  // alone, so an output's summation order never depends on n. (Short rows
  // keep the cooperative mode: the tiny models' results stay as they were;
  // a q8_0 stories260K's perplexity against the CPU's moves by 2e-4 with the
  // f16 rows' order, through the activations' 8-bit rounding.)
  constexpr int64_t kPerRowMinK = 192;
  const bool per_row = device_->physical().type == VK_PHYSICAL_DEVICE_TYPE_CPU && k >= kPerRowMinK;
  const int64_t tokens_per_group = per_row && n == 1 ? 1 : kTile;
  const int32_t mode = per_row ? (n == 1 ? 1 : 2) : 0;
  for (int64_t r0 = 0; r0 < m; r0 += per_piece) {
    const int64_t rows = std::min(per_piece, m - r0);
    const uint64_t start = w.offset + static_cast<uint64_t>(r0) * row_bytes;
    const uint64_t aligned = start / alignment_ * alignment_;
    Bound piece;
    piece.binding = {buffer.value()->handle(), aligned,
                     (start - aligned + (rows - 1) * row_bytes + last_row + 3) / 4 * 4};
    const uint64_t row_groups =
        per_row ? static_cast<uint64_t>((rows + kRowsPerGroup - 1) / kRowsPerGroup)
                : static_cast<uint64_t>(rows);
    const uint64_t groups =
        row_groups * static_cast<uint64_t>((n + tokens_per_group - 1) / tokens_per_group);
    if (quantised) {
      const MatmulQuantPush push{u32(n),           u32(k),
                                 u32(rows),        u32(r0),
                                 u32(row_bytes),   u32(start - aligned),
                                 bo.value().first, u32(out.stride[0])};
      RETURN_IF_ERROR(dispatch(Shader::kMatmulQuant, static_cast<int32_t>(w.dtype) + 16 * mode,
                               {codes, scales, sums, piece, bo.value()}, push, groups));
    } else {
      const MatmulFloatPush push{u32(n),           u32(k),
                                 u32(rows),        u32(r0),
                                 u32(row_bytes),   u32(start - aligned),
                                 bx.value().first, u32(x.stride[0]),
                                 bo.value().first, u32(out.stride[0])};
      // Rows at whole words, k even: the per-row modes read two 16-bit
      // weights per word.
      const bool word_rows = row_bytes % 4 == 0 && (start - aligned) % 4 == 0 && k % 2 == 0;
      const int32_t variant =
          static_cast<int32_t>(w.dtype) + 16 * mode + (per_row && word_rows ? 256 : 0);
      RETURN_IF_ERROR(
          dispatch(Shader::kMatmulFloat, variant, {bx.value(), piece, bo.value()}, push, groups));
    }
  }
  return ok_status();
}

void VulkanBackend::matmul(const Tensor& x, const Tensor& w, const Tensor& out) {
  run("matmul", {&x, &w, &out}, [&] { return record_matmul(x, w, out); });
}

Status VulkanBackend::read_extent(const char* name, const Tensor& t, std::vector<float>& host) {
  auto buffer = device_buffer(name, t);
  if (!buffer.ok()) return buffer.status();
  RETURN_IF_ERROR(need(t.dtype == DType::kF32 && t.offset % 4 == 0,
                       std::string(name) + " must be f32 at a multiple of 4 bytes"));
  const uint64_t floats = extent_bytes(t) / 4;
  host.resize(static_cast<std::size_t>(floats));
  if (floats == 0) return ok_status();
  const Tensor whole =
      Tensor::in_buffer(*t.buffer, t.offset, DType::kF32, {static_cast<int64_t>(floats)});
  return read(whole, std::as_writable_bytes(std::span(host)));
}

// The gather and its plan: vulkan_attention.cpp.
void VulkanBackend::attention(const AttentionParams& params) {
  run("attention", {&params.q, &params.batch_k, &params.out}, [&]() -> Status {
    MaskedAttentionParams masked;
    KVRecordLayout records;
    RETURN_IF_ERROR(prepare_attention(params, masked, records));
    return record_masked_attention(masked, records);
  });
}

Status VulkanBackend::record_masked_attention(const MaskedAttentionParams& p,
                                              const KVRecordLayout& records) {
  // The cache K/V as a store's int8 or int4 records, read where they lie:
  // u8 [kv_heads, slots, record bytes].
  const bool as_records = records.format == KVRecordFormat::kInt8Symmetric ||
                          records.format == KVRecordFormat::kInt4Symmetric;
  for (const Tensor* t : {&p.q, &p.batch_k, &p.batch_v, &p.out})
    RETURN_IF_ERROR(need(t->dtype == DType::kF32 && t->rank >= 2, "tensors must be f32"));
  for (const Tensor* t : {&p.cache_k, &p.cache_v})
    RETURN_IF_ERROR(need(t->dtype == (as_records ? DType::kU8 : DType::kF32),
                         as_records ? "records must be u8" : "tensors must be f32"));
  // A u8 mask is attention's: a bit per key, rows of whole 32-bit words.
  const bool mask_bits = p.mask.dtype == DType::kU8;
  RETURN_IF_ERROR(need((p.mask.dtype == DType::kF32 || mask_bits) && p.mask.rank == 2,
                       "mask must be f32 [n, slots + n]"));
  RETURN_IF_ERROR(need(p.q.rank == 3, "q must be [n, heads, head_dim]"));
  const int64_t n = p.q.dim(0), heads = p.q.dim(1), head_dim = p.q.dim(2);
  RETURN_IF_ERROR(need(p.cache_k.rank == 3, "cache_k must be [kv_heads, slots, head_dim]"));
  const int64_t kv_heads = p.cache_k.dim(0), slots = p.cache_k.dim(1);
  RETURN_IF_ERROR(
      need(kv_heads > 0 && heads % kv_heads == 0, "heads must be a multiple of kv_heads"));
  const int64_t cache_width =
      as_records ? static_cast<int64_t>(kv_record_bytes(records)) : head_dim;
  RETURN_IF_ERROR(need(!as_records || (records.width == head_dim && cache_width > 0),
                       "records of width " + std::to_string(records.width) + " for head_dim " +
                           std::to_string(head_dim)));
  RETURN_IF_ERROR(need(shape_is(p.cache_k, {kv_heads, slots, cache_width}) &&
                           shape_is(p.cache_v, {kv_heads, slots, cache_width}),
                       as_records ? "cache_k and cache_v must be [kv_heads, slots, record bytes]"
                                  : "cache_k and cache_v must be [kv_heads, slots, head_dim]"));
  RETURN_IF_ERROR(need(
      shape_is(p.batch_k, {n, kv_heads, head_dim}) && shape_is(p.batch_v, {n, kv_heads, head_dim}),
      "batch_k and batch_v must be [n, kv_heads, head_dim]"));
  const int64_t mask_row = mask_bits ? (slots + n + 31) / 32 * 4 : slots + n;
  RETURN_IF_ERROR(need(shape_is(p.mask, {n, mask_row}) &&
                           (!mask_bits || (p.mask.offset % 4 == 0 && p.mask.stride[0] % 4 == 0)),
                       mask_bits ? "a bit mask must be u8 [n, 4 * ceil((slots + n) / 32)] of "
                                   "whole words"
                                 : "mask must be [n, slots + n]"));
  RETURN_IF_ERROR(need(shape_is(p.out, {n, heads, head_dim}), "out must be [n, heads, head_dim]"));
  if (n == 0 || heads == 0 || head_dim == 0) return ok_status();
  Bound b[7];
  const char* names[7] = {"q", "cache_k", "cache_v", "batch_k", "batch_v", "mask", "out"};
  const Tensor* tensors[7] = {&p.q,       &p.cache_k, &p.cache_v, &p.batch_k,
                              &p.batch_v, &p.mask,    &p.out};
  for (int i = 0; i < 7; ++i) {
    if (tensors[i]->elements() == 0) {  // an empty cache: any binding, never read
      b[i] = b[0];
      continue;
    }
    auto bound = bind(names[i], *tensors[i]);
    if (!bound.ok()) return bound.status();
    b[i] = bound.value();
  }
  // The scores, and for records the value records' scales (a group each) after them.
  const int64_t groups = !as_records ? 0
                         : records.format == KVRecordFormat::kInt8Symmetric
                             ? 1
                             : head_dim / records.group_size;
  auto scores = bind_scratch(kScoresSlot,
                             static_cast<std::size_t>(n * heads * (slots + n) * (1 + groups)) * 4);
  if (!scores.ok()) return scores.status();
  MaskedAttentionPush push{};
  push.n = u32(n);
  push.heads = u32(heads);
  push.kv_heads = u32(kv_heads);
  push.head_dim = u32(head_dim);
  push.slots = u32(slots);
  push.q_off = b[0].first, push.q_s0 = u32(p.q.stride[0]), push.q_s1 = u32(p.q.stride[1]);
  push.ck_off = b[1].first, push.ck_s0 = u32(p.cache_k.stride[0]);
  push.ck_s1 = u32(p.cache_k.stride[1]);
  push.cv_off = b[2].first, push.cv_s0 = u32(p.cache_v.stride[0]);
  push.cv_s1 = u32(p.cache_v.stride[1]);
  push.bk_off = b[3].first, push.bk_s0 = u32(p.batch_k.stride[0]);
  push.bk_s1 = u32(p.batch_k.stride[1]);
  push.bv_off = b[4].first, push.bv_s0 = u32(p.batch_v.stride[0]);
  push.bv_s1 = u32(p.batch_v.stride[1]);
  // A bit mask is bound by byte (u8) and read by word.
  push.m_off = mask_bits ? b[5].first / 4 : b[5].first;
  push.m_s0 = u32(mask_bits ? p.mask.stride[0] / 4 : p.mask.stride[0]);
  push.o_off = b[6].first, push.o_s0 = u32(p.out.stride[0]), push.o_s1 = u32(p.out.stride[1]);
  push.scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
  push.group = u32(records.group_size);
  const int32_t variant =
      (mask_bits ? 1 : 0) + 2 * (as_records ? static_cast<int32_t>(records.format) : 0);
  return dispatch(Shader::kMaskedAttention, variant,
                  {b[0], b[1], b[2], b[3], b[4], b[5], b[6], scores.value()}, push,
                  static_cast<uint64_t>(n * heads));
}

void VulkanBackend::masked_attention(const MaskedAttentionParams& params) {
  run("masked_attention", {&params.q, &params.cache_k, &params.mask, &params.out},
      [&] { return record_masked_attention(params); });
}

Status VulkanBackend::record_cache_update(const Tensor& cache, const Tensor& keep,
                                          const Tensor& insert, const Tensor& rows) {
  for (const Tensor* t : {&cache, &keep, &insert, &rows})
    RETURN_IF_ERROR(need(t->dtype == DType::kF32, "tensors must be f32"));
  RETURN_IF_ERROR(need(cache.rank == 3, "cache must be [kv_heads, slots, head_dim]"));
  const int64_t kv_heads = cache.dim(0), slots = cache.dim(1), head_dim = cache.dim(2);
  RETURN_IF_ERROR(need(insert.rank == 2 && insert.dim(0) == slots, "insert must be [slots, n]"));
  const int64_t n = insert.dim(1);
  RETURN_IF_ERROR(need(keep.elements() == slots && keep.is_contiguous(), "keep must be [slots]"));
  RETURN_IF_ERROR(
      need(shape_is(rows, {n, kv_heads, head_dim}), "rows must be [n, kv_heads, head_dim]"));
  if (cache.elements() == 0) return ok_status();
  auto bc = bind("cache", cache);
  if (!bc.ok()) return bc.status();
  auto bk = bind("keep", keep);
  if (!bk.ok()) return bk.status();
  Bound bi = bk.value(), br = bk.value();  // n == 0: never read
  if (n > 0) {
    auto i = bind("insert", insert);
    if (!i.ok()) return i.status();
    auto r = bind("rows", rows);
    if (!r.ok()) return r.status();
    bi = i.value();
    br = r.value();
  }
  const CacheUpdatePush push{u32(kv_heads),
                             u32(slots),
                             u32(head_dim),
                             u32(n),
                             bc.value().first,
                             u32(cache.stride[0]),
                             u32(cache.stride[1]),
                             bk.value().first,
                             bi.first,
                             u32(insert.stride[0]),
                             br.first,
                             u32(rows.stride[0]),
                             u32(rows.stride[1])};
  return dispatch(Shader::kCacheUpdate, 0, {bc.value(), bk.value(), bi, br}, push,
                  (static_cast<uint64_t>(cache.elements()) + 255) / 256);
}

void VulkanBackend::cache_update(const Tensor& cache, const Tensor& keep, const Tensor& insert,
                                 const Tensor& rows) {
  run("cache_update", {&cache, &keep, &insert, &rows},
      [&] { return record_cache_update(cache, keep, insert, rows); });
}

// ---- weights ----

Result<std::size_t> VulkanBackend::adopt_weights(std::span<Tensor* const> weights) {
  if (!device_) return failed_precondition("backend vulkan: adopt_weights before init()");
  // One device buffer per distinct host address (tied tensors stay tied).
  std::map<const void*, std::pair<VulkanBuffer*, uint64_t>> placed;
  std::vector<std::unique_ptr<VulkanBuffer>> made;
  std::size_t total = 0;
  for (Tensor* t : weights) {
    if (t == nullptr || !t->on_host())
      return invalid_argument("backend vulkan: adopt_weights takes host tensors, not " +
                              (t ? t->describe() : std::string("null")));
    const uint64_t bytes = extent_bytes(*t);
    auto& slot = placed[t->data];
    if (slot.first != nullptr) {
      if (slot.second < bytes)
        return invalid_argument(
            "backend vulkan: adopt_weights: tensors sharing data differ in "
            "extent (" +
            t->describe() + ")");
      continue;
    }
    auto buffer = VulkanBuffer::create(device_, bytes, BufferUsage::kWeights, false, retirement_);
    if (!buffer.ok()) return buffer.status().with_context("uploading weight " + t->describe());
    RETURN_IF_ERROR(write_bytes(*buffer.value(), 0, static_cast<const std::byte*>(t->data),
                                static_cast<std::size_t>(bytes)));
    slot = {buffer.value().get(), bytes};
    total += bytes;
    made.push_back(std::move(buffer).value());
  }
  for (Tensor* t : weights) {
    const auto& slot = placed[t->data];
    t->buffer = slot.first;
    t->offset = 0;
  }
  for (Tensor* t : weights) t->data = nullptr;
  for (auto& b : made) weights_.push_back(std::move(b));
  return total;
}

}  // namespace tessera
