// The Vulkan compute backend (docs/backends.md): device memory in
// VulkanBuffers, reached by the host only through write / read / copy; the
// op set as GLSL compute shaders (shaders/). Ops are recorded, not run: each
// records its dispatches (a barrier after each) into the open command buffer,
// and what was recorded is submitted, in one vkQueueSubmit, and waited for
// only when the host must see a result (read, synchronize, copy to the host)
// or the recording grew past a limit. An op's host inputs (tokens, RoPE
// angles, attention's gathered K/V and mask, write's bytes while work is
// pending) go into an upload ring of host-visible memory that lives until its
// submission finished; so does a buffer destroyed while recorded work uses it
// (vulkan::Retirement). A decode step is one submission per synchronize.
// Ops return void: an op that cannot be recorded (a host tensor where a
// device one is needed, a dtype without a kernel) keeps the first such error,
// with the op and its tensors, for synchronize(); a submission that fails
// (device lost, a timeout) is an error every later synchronize, write, read
// and copy returns, and every later op is a no-op.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backends/vulkan/attention_gather.h"
#include "backends/vulkan/vulkan_buffer.h"
#include "backends/vulkan/vulkan_commands.h"
#include "backends/vulkan/vulkan_device.h"
#include "backends/vulkan/vulkan_pipelines.h"
#include "core/backend/backend.h"
#include "core/plugin/options.h"

namespace tessera {

class VulkanBackend final : public Backend {
 public:
  // The plugin entry point: backend.device chooses the device ("auto", an
  // index, or part of its name); refuses (sdk::Refusal) when there is no
  // loader, driver or matching device, saying what to install or which
  // devices there are.
  explicit VulkanBackend(const OptionValues& options);
  // The same without the plugin machinery (tests).
  static Result<std::unique_ptr<VulkanBackend>> create(const std::string& device = "auto");
  ~VulkanBackend() override;

  // Creates the logical device, its queue and the staging memory; threads
  // are ignored (the device has its own).
  Status init(const BackendOptions& options) override;
  DeviceInfo device_info() const override;
  std::vector<DeviceInfo> devices() const override;
  bool supports_weight_dtype(DType dtype) const override;
  using Backend::allocate;
  // Device memory (host_data() null) whatever the usage.
  Result<std::unique_ptr<Buffer>> allocate(std::size_t bytes, BufferUsage usage) override;
  Status write(const Tensor& dst, std::span<const std::byte> bytes) override;
  Status read(const Tensor& src, std::span<std::byte> bytes) override;
  Status copy(const Tensor& src, const Tensor& dst) override;
  // Submits what was recorded and waits for it; then the first error an op
  // met since the last call (with how many more followed), or the sticky
  // error of a failed submission.
  Status synchronize() override;
  // vkQueueSubmit calls so far (also in device_info().description).
  uint64_t submissions() const;
  // Dispatches and copies recorded so far.
  uint64_t commands_recorded() const;
  // Tables of rope angles computed and uploaded so far: one per forward
  // (per distinct positions and rule), not one per rope call.
  uint64_t rope_tables_uploaded() const { return rope_tables_uploaded_; }
  BackendCounters counters() const override {
    return {submissions(), commands_recorded(), attention_plans_built_};
  }

  void embedding(const Tensor& table, std::span<const int32_t> tokens, const Tensor& out) override;
  void matmul(const Tensor& x, const Tensor& w, const Tensor& out) override;
  void rms_norm(const Tensor& x, const Tensor& weight, float eps, const Tensor& out) override;
  using Backend::rope;
  void rope(const Tensor& x, std::span<const int32_t> positions, const RopeSpec& rope) override;
  void swiglu(const Tensor& gate, const Tensor& up, const Tensor& out) override;
  void add(const Tensor& a, const Tensor& b, const Tensor& out) override;
  void add_bias(const Tensor& x, const Tensor& bias, const Tensor& out) override;
  void geglu(const Tensor& gate, const Tensor& up, const Tensor& out) override;
  void scale(const Tensor& x, float factor, const Tensor& out) override;
  // The entries a query may see as the columns of one dense K/V with the
  // CPU's visibility as an additive mask (attention_gather.h), run as
  // masked_attention (vulkan_attention.cpp). Over device K/V, the plan and
  // the uploaded mask of a forward's first layer serve the layers after it
  // (AttentionParams::visibility_id). Stored K/V in this device's memory are bound in place
  // (one segment seen whole) or assembled by recorded copies, and keys kept
  // before RoPE or sinks moved by reassign are turned by the rope shader;
  // stored K/V in host memory are gathered and turned on the host and
  // uploaded (the batch's keys then read back for it). Encoded views are
  // refused: the caller passes decoded f32 views.
  void attention(const AttentionParams& params) override;
  void masked_attention(const MaskedAttentionParams& params) override;
  void cache_update(const Tensor& cache, const Tensor& keep, const Tensor& insert,
                    const Tensor& rows) override;
  // Uploads every weight to device memory (one buffer each; tensors that
  // share data stay shared) and repoints them (data null, buffer + offset).
  Result<std::size_t> adopt_weights(std::span<Tensor* const> weights) override;
  // The int8 codec's records and the int4 codec's with even groups
  // (vulkan_kv_records.cpp); a view's records are decoded by attention's
  // gather into its scratch columns.
  bool supports_kv_records(const KVRecordLayout& layout) const override;
  Status encode_kv(const Tensor& src, const Tensor& dst, const KVRecordLayout& layout) override;
  Status round_trip_kv(const Tensor& src, const Tensor& dst, const KVRecordLayout& layout) override;

 private:
  VulkanBackend() = default;
  Status open(const std::string& device);

  // A tensor bound for a shader: the binding, and where the tensor starts in
  // it (in floats for f32 tensors, in bytes for weights).
  struct Bound {
    vulkan::Binding binding;
    uint32_t first = 0;
  };
  Result<Bound> bind(const char* name, const Tensor& t) const;
  Result<vulkan::VulkanBuffer*> device_buffer(const char* name, const Tensor& t) const;
  Result<Bound> bind_scratch(int slot, std::size_t bytes);
  // The scratch buffer of `slot`, at least `bytes` (grown, at least doubling,
  // never shrunk; a replaced one lives until the work using it finished).
  Result<vulkan::VulkanBuffer*> scratch_buffer(int slot, std::size_t bytes);
  // Room for `bytes` of an op's host inputs (all its uploads: none of them
  // moves after), in the upload ring; submits first when the ring holds more
  // than its limit.
  Status reserve_uploads(std::size_t bytes);
  // Host bytes in the ring, where the recorded work reads them (bound
  // directly, or copied from).
  struct Upload {
    vulkan::VulkanBuffer* buffer = nullptr;
    std::size_t offset = 0;
    Bound bound;
  };
  // (data null: room only, for the caller to fill at buffer->mapped() + offset)
  Result<Upload> upload(const void* data, std::size_t bytes);
  // Whether copy runs (offsets from t's first byte) stay inside t's buffer.
  Status within(const Tensor& t, const vulkan::VulkanBuffer& buffer,
                std::span<const VkBufferCopy> runs, bool source) const;
  // Submits what was recorded and waits; then the ring is reused. A failure
  // becomes the sticky device error (returned).
  Status flush();
  template <typename Push>
  Status dispatch(vulkan::Shader shader, int32_t variant, std::initializer_list<Bound> bindings,
                  const Push& push, uint64_t groups);
  // Records `record` into the open command buffer (submitting first past the
  // recording limit); an error becomes the op error synchronize() returns,
  // prefixed with the op and `tensors`. After a device error: nothing.
  template <typename Record>
  void run(const char* op, std::initializer_list<const Tensor*> tensors, Record&& record);
  void fail(const char* op, std::initializer_list<const Tensor*> tensors, const Status& status);
  // host -> buffer at `offset`: straight into mapped memory when no work is
  // pending, else through the ring with a recorded copy (no submission).
  Status write_bytes(vulkan::VulkanBuffer& buffer, std::size_t offset, const std::byte* host,
                     std::size_t bytes);
  // buffer at `offset` -> host, after the pending work: from mapped memory
  // where it is cached, else copied through the staging buffer.
  Status read_bytes(vulkan::VulkanBuffer& buffer, std::size_t offset, std::byte* host,
                    std::size_t bytes);
  Status record_matmul(const Tensor& x, const Tensor& w, const Tensor& out);
  Status record_embedding(const Tensor& table, std::span<const int32_t> tokens, const Tensor& out);
  Status record_elementwise(int op, const Tensor& a, const Tensor* b, float factor,
                            const Tensor& out);
  // `records` int8 or int4: cache_k / cache_v are a store's records of that
  // layout, read in place (u8 [kv_heads, slots, record bytes]).
  Status record_masked_attention(const MaskedAttentionParams& p,
                                 const KVRecordLayout& records = {});
  // attention's host part: the gather, its uploads, and the masked_attention
  // call over them (`masked`).
  Status prepare_attention(const AttentionParams& p, MaskedAttentionParams& masked,
                           KVRecordLayout& records);
  // The same when stored K/V lie in this device's memory: bound in place, or
  // assembled by recorded copies (and turned by RoPE) on the device.
  Status prepare_device_attention(const AttentionParams& p, MaskedAttentionParams& masked,
                                  KVRecordLayout& records);
  Status record_rope(const Tensor& x, std::span<const int32_t> positions, const RopeSpec& rope);
  // The floats from t's first element to just past its last (t f32 in this
  // backend's memory), read back into `host`.
  Status read_extent(const char* name, const Tensor& t, std::vector<float>& host);
  // records (u8 [a, b, c, record bytes]) -> f32 [a, b, c, width].
  Status decode_kv(const Tensor& src, const Tensor& dst, const KVRecordLayout& layout);
  // Entries [entry, entry + count) of a segment of device records, decoded
  // into attention's gathered columns (f32 [kv_heads, count, head_dim]).
  Status decode_run(const KVSegment& segment, int64_t entry, int64_t count, const Tensor& k_columns,
                    const Tensor& v_columns);
  // kv_records.comp in `mode` (0 encode, 1 round trip, 2 decode).
  Status record_kv_records(int mode, const Tensor& src, const Tensor& dst,
                           const KVRecordLayout& layout);
  Status record_cache_update(const Tensor& cache, const Tensor& keep, const Tensor& insert,
                             const Tensor& rows);

  std::shared_ptr<vulkan::Instance> instance_;
  std::vector<vulkan::PhysicalDevice> physical_;
  std::size_t chosen_ = 0;
  std::shared_ptr<const vulkan::Device> device_;
  std::shared_ptr<vulkan::Retirement> retirement_;
  std::unique_ptr<vulkan::Commands> commands_;
  std::unique_ptr<vulkan::Pipelines> pipelines_;
  std::unique_ptr<vulkan::VulkanBuffer> staging_;  // read where memory is not mapped
  // The upload ring: chunks of mapped memory filled in order; the last is
  // the one in use, the others full. All are in use until the submission
  // that reads them finished; then only the last (the largest) is kept.
  std::vector<std::unique_ptr<vulkan::VulkanBuffer>> upload_chunks_;
  std::size_t upload_used_ = 0;   // bytes of the last chunk taken
  std::size_t upload_total_ = 0;  // bytes taken since the last submission
  uint64_t commands_total_ = 0;
  // rope's angles, one (cos, sin) per token and pair, kept while the ring
  // that holds them is: a forward's layers turn q and k at the same
  // positions by the same rule, so only the first call computes and uploads
  // them. Keyed by value (positions, rule, factors, head_dim), since a span's
  // address may be reused for other contents. A few, for keys turned at
  // read (other positions) and layers that alternate rules (gemma3).
  struct RopeAngles {
    std::vector<int32_t> positions;
    std::vector<float> factors;
    RopeSpec rope;  // freq_factors points into factors
    int64_t head_dim = 0;
    Upload uploaded;
    uint64_t generation = 0;  // upload_generation_ when uploaded; 0: never
    uint64_t last_used = 0;
  };
  static constexpr std::size_t kRopeTables = 4;
  std::array<RopeAngles, kRopeTables> rope_tables_;
  uint64_t rope_clock_ = 0;
  uint64_t rope_tables_uploaded_ = 0;
  std::vector<float> rope_cs_;  // the angles being computed, before the upload
  // The upload of the angles for (positions, rope, head_dim), made if no
  // table of this submission holds them.
  Result<Upload> rope_angles(std::span<const int32_t> positions, const RopeSpec& rope,
                             int64_t head_dim);
  // Device scratch by slot (quantised activations, attention scores), grown
  // between submissions.
  std::vector<std::unique_ptr<vulkan::VulkanBuffer>> scratch_;
  std::vector<VkBufferCopy> copy_runs_;  // copy()'s regions
  // Set while attention gathers: copy() records its copies with no barrier
  // after each (the gather records one after them all).
  bool gathering_ = false;
  // Weights adopt_weights uploaded (they live as long as the backend).
  std::vector<std::unique_ptr<vulkan::VulkanBuffer>> weights_;
  // attention's gather over host K/V, and the batch's K/V read back for it.
  vulkan::AttentionGather gather_;
  std::vector<float> batch_k_host_, batch_v_host_;
  // attention's plans over device K/V, kept across the layers of a forward:
  // a few, so that alternating layer groups (sliding-window and global
  // layers) each find theirs. The mask stays where it was uploaded until the
  // ring is freed (upload_generation_ moves on).
  struct AttentionPlan {
    vulkan::AttentionGather gather;
    Upload mask;
    uint64_t mask_generation = 0;  // 0: not uploaded
    uint64_t last_used = 0;
  };
  static constexpr std::size_t kAttentionPlans = 4;
  std::array<AttentionPlan, kAttentionPlans> plans_;
  uint64_t plan_clock_ = 0;
  uint64_t upload_generation_ = 1;
  uint64_t attention_plans_built_ = 0;
  // The plan that holds for p, or the least recently used one, gathered anew.
  AttentionPlan& plan_for(const AttentionParams& p);
  Status device_columns(const AttentionParams& p, const vulkan::AttentionGather& gather,
                        MaskedAttentionParams& masked);
  uint64_t max_binding_ = 0;
  uint64_t alignment_ = 16;
  Status error_;
  int64_t later_errors_ = 0;
  Status device_error_;  // a failed submission: sticky
};

}  // namespace tessera
