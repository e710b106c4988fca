// The compute interface every backend implements: the op set of the
// transformer families core/model/layer_spec.h describes. The CPU backend is the reference; others
// are tested op by op against it (tests/backend/conformance). Ops take pre-validated views and
// return void (hot path); anything a user can cause is checked earlier and reported as a Status,
// and what a device meets while running (lost, out of memory) is returned by synchronize().
// docs/backends.md is the contract in one page, with the steps still to land.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/backend/buffer.h"
#include "core/backend/rope_spec.h"
#include "core/cache/kv_view.h"
#include "core/compressor/kv_records.h"
#include "core/plugin/plugin_object.h"
#include "core/status/status.h"
#include "core/tensor/tensor.h"

namespace tessera {

struct DeviceInfo {
  std::string name;         // "cpu (2 threads)", "AMD Radeon RX 7900 XTX"
  std::string description;  // implementation details worth printing
  int threads = 1;
  // What follows is ABI 8.0 (docs/backends.md, "Memory").
  std::string kind = "cpu";  // the backend's family: "cpu", "vulkan"
  std::string type;          // the device's type as its API reports it ("discrete", "cpu")
  bool host_memory = true;   // its buffers are host memory (Buffer::host_data non-null)
  // Device memory in bytes, total and free now; 0 where the buffers are host
  // memory (the memory budget then counts them against the host's).
  uint64_t memory_bytes = 0;
  uint64_t memory_free_bytes = 0;
  // Capabilities the kernels may use: 16-bit float arithmetic, 8-bit integer
  // dot products, the subgroup (warp) width, and the largest range one
  // binding may address (a larger tensor is bound in pieces). 0 / false: none.
  bool fp16 = false;
  bool int8_dot = false;
  int subgroup_size = 0;
  uint64_t max_binding_bytes = 0;
};

// Which batch tokens each batch token sees: the batch's own rule (parents,
// blocks, sequences; core/model/batch.h), as bits. Row i, bit j: token i sees
// token j. The positions rule (WindowRule) cuts further.
struct InBatchVisibility {
  std::span<const uint64_t> mask;  // [n, words] row-major
  int64_t words = 0;               // ceil(n / 64)
  bool sees(int64_t i, int64_t j) const {
    return (mask[static_cast<std::size_t>(i * words + j / 64)] >> (j % 64)) & 1u;
  }
};

// One attention call for a batch of n tokens over one layer.
// docs/architecture.md, "Attention over stored K/V".
struct AttentionParams {
  Tensor q;        // f32 [n, heads, head_dim], rotated at `positions`
  Tensor batch_k;  // f32 [n, kv_heads, head_dim]: the batch's own keys as the cache
                   // holds them (through the layer's codec; rotated unless stored_keys
                   // says the cache keeps them before RoPE)
  Tensor batch_v;  // f32 [n, kv_heads, head_dim]
  std::span<const int32_t> positions;  // [n] logical positions of the batch tokens
  std::span<const KVView> views;       // entries stored before this forward, per sequence
  std::span<const int32_t> view_of;    // [n] the view each token reads
  // [n] each batch token's branch (kv_view.h): a stored entry is kept only if
  // branch_sees(its token's branch, the entry's) (ABI 3.0); segments without
  // branches (KVSegment::branches null) are not tested. The transformer
  // always passes one per token; a caller that never branches may pass none
  // (nothing is then filtered). In-batch keys are already cut by in_batch.
  std::span<const BranchId> branches;
  InBatchVisibility in_batch;
  WindowRule rule;  // the store's: which keys (stored and in-batch) a query sees
  StoredKeys stored_keys = StoredKeys::kRotated;
  RopeSpec rope;  // the layer's: for keys rotated at read, and sinks moved by `reassign`
  Tensor out;     // f32 [n, heads, head_dim]
  // Non-zero: the calls of one forward over one batch carry the same id
  // (next_visibility_id()), and between them nothing is stored: positions,
  // view_of, branches and in_batch are the same spans and the stores'
  // entries the same (each layer's own K/V, at the same positions). A
  // backend may then keep what it derived from the visibility (a device's
  // mask and gather plan, built and uploaded once, not once per layer), as
  // long as it checks what may still differ between layers: the rule (a
  // sliding-window layer's), stored_keys and which segments each view holds.
  // 0: no promise. (ABI 8.3; docs/backends.md, step 3)
  uint64_t visibility_id = 0;
};

// A fresh visibility id, unique in the process (never 0): one per forward
// chunk, shared by its layers' attention calls.
uint64_t next_visibility_id();

// One fixed-shape attention call (the embedded block-diffusion step,
// algorithms.md §2.5, docs/block-diffusion.md): n queries over EVERY slot of
// a dense cache and the n batch keys, an additive mask choosing which they
// see. The shapes depend only on the model, the cache size and the block,
// never on how much is written, so an exported graph can run it.
struct MaskedAttentionParams {
  Tensor q;        // f32 [n, heads, head_dim], rotated
  Tensor cache_k;  // f32 [kv_heads, slots, head_dim]: every slot, written or not
  Tensor cache_v;  // likewise
  Tensor batch_k;  // f32 [n, kv_heads, head_dim], rotated
  Tensor batch_v;  // likewise
  // f32 [n, slots + n], added to the scaled scores: column s < slots is cache
  // slot s, column slots + j batch key j; 0 for a key seen, -inf for one
  // hidden (never read: a hidden slot may hold anything).
  Tensor mask;
  Tensor out;  // f32 [n, heads, head_dim]
};

// The ops of the Backend interface, for supports_op. (ABI 8.0)
enum class BackendOp {
  kEmbedding,
  kMatmul,
  kRmsNorm,
  kRope,
  kSwiglu,
  kAdd,
  kAddBias,
  kGeglu,
  kScale,
  kAttention,
  kMaskedAttention,
  kCacheUpdate,
};
inline constexpr BackendOp kAllBackendOps[] = {
    BackendOp::kEmbedding, BackendOp::kMatmul,          BackendOp::kRmsNorm,
    BackendOp::kRope,      BackendOp::kSwiglu,          BackendOp::kAdd,
    BackendOp::kAddBias,   BackendOp::kGeglu,           BackendOp::kScale,
    BackendOp::kAttention, BackendOp::kMaskedAttention, BackendOp::kCacheUpdate};
std::string_view backend_op_name(BackendOp op);

// Backend::copy's rule for its two tensors (ok, or why not), and the runs of
// bytes it moves: (source offset, destination offset, bytes), from each
// tensor's first element; one run when both are contiguous. For a backend's
// own copy.
Status check_copy_shapes(const Tensor& src, const Tensor& dst);
void for_each_copy_run(
    const Tensor& src, const Tensor& dst,
    const std::function<void(std::size_t, std::size_t, std::size_t)>& run);  // "matmul"

// What a backend has done since it was created, for reports (tessera bench
// prints submissions per token): 0 where it does not count. (ABI 8.0)
struct BackendCounters {
  uint64_t submissions = 0;  // batches of work handed to the device (vkQueueSubmit)
  uint64_t commands = 0;     // ops' dispatches and copies recorded into them
  // Attention visibilities derived and uploaded (a mask and gather plan): a
  // device backend that keeps one across a forward's layers
  // (AttentionParams::visibility_id) counts one per forward per layer group,
  // not one per layer. (ABI 8.3)
  uint64_t attention_plans = 0;
};

struct BackendOptions {
  int threads = 1;
  // The longest attention span (stored + batch tokens) the caller will ask
  // for, so a backend can size its scratch once instead of growing it while
  // decoding; 0 when unknown.
  int64_t max_context = 0;
  // Where the weights live once adopt_weights has them: "mapped" (in the
  // caller's file mapping, read in place), "copied" (in memory the backend
  // owns) or "auto" (the backend decides). [backend] weights in the config.
  std::string weights = "auto";
};

class Backend : public PluginObject {
 public:
  // Called once after creation, before any other method.
  virtual Status init(const BackendOptions& options) = 0;
  virtual DeviceInfo device_info() const = 0;
  // Every device this backend could run on, in the order backend.device
  // counts them; callable before init() (tessera plugins lists them). A
  // backend with one device returns device_info(). (ABI 8.0)
  virtual std::vector<DeviceInfo> devices() const { return {device_info()}; }
  // Whether matmul accepts weights of this dtype (asked at load time).
  virtual bool supports_weight_dtype(DType dtype) const = 0;
  // Whether the op runs here with this dtype: the weight dtype for embedding
  // and matmul, f32 for the rest. Calling an op it does not support is a
  // caller's bug; the conformance suite reports those as not supported. The
  // default: every op, for the weight dtypes supports_weight_dtype accepts.
  // (ABI 8.0)
  virtual bool supports_op(BackendOp op, DType dtype) const {
    if (op == BackendOp::kEmbedding || op == BackendOp::kMatmul)
      return supports_weight_dtype(dtype);
    return dtype == DType::kF32;
  }
  // `bytes` of memory for `usage` (ABI 8.0: the usage), uninitialised. On a
  // device, memory the host cannot read: reach it through write / read / copy.
  virtual Result<std::unique_ptr<Buffer>> allocate(std::size_t bytes, BufferUsage usage) = 0;
  Result<std::unique_ptr<Buffer>> allocate(std::size_t bytes) {
    return allocate(bytes, BufferUsage::kActivations);
  }

  // The host's way into a tensor's memory, wherever it lives (ABI 8.0). The
  // tensor must be contiguous and `bytes` exactly its size. The defaults serve
  // host tensors (memcpy) and refuse a device tensor; a device backend
  // overrides all three. Work recorded before a read is finished first.
  virtual Status write(const Tensor& dst, std::span<const std::byte> bytes);
  virtual Status read(const Tensor& src, std::span<std::byte> bytes);
  // dst = src, in this backend's memory or on the host: the same dtype and
  // shape with any strides, the innermost dimension contiguous in both (ABI
  // 8.1: strided; a block format copies only contiguous), or both contiguous
  // with as many elements. The K/V of a store in device memory are written
  // and copied so (plugins/cache_common/slot_arena.h).
  virtual Status copy(const Tensor& src, const Tensor& dst);
  // Waits for every op issued so far and returns the first error any of them
  // met since the last call (a device lost, out of device memory), with what
  // it was doing. The CPU finishes each op as it is called: always ok.
  virtual Status synchronize() { return ok_status(); }
  // What it has done so far; the CPU counts nothing (its ops run as called).
  virtual BackendCounters counters() const { return {}; }

  // out[t, :] = table[tokens[t], :]. table [vocab, dim] of a weight dtype the
  // backend supports (rows of whole blocks for a block format), out f32 [n, dim].
  virtual void embedding(const Tensor& table, std::span<const int32_t> tokens,
                         const Tensor& out) = 0;
  // out = x * w^T. x f32 [n, k], w [m, k] of a supported weight dtype (row-major,
  // out x in), out f32 [n, m].
  virtual void matmul(const Tensor& x, const Tensor& w, const Tensor& out) = 0;
  // out[t] = x[t] / sqrt(mean(x[t]^2) + eps) * weight. x, out f32 [n, d]; weight f32 [d].
  virtual void rms_norm(const Tensor& x, const Tensor& weight, float eps, const Tensor& out) = 0;
  // Rotates the pairs of every head as `rope` says (RopeSpec), in place.
  // x f32 [n, heads, head_dim]; positions has n entries.
  virtual void rope(const Tensor& x, std::span<const int32_t> positions, const RopeSpec& rope) = 0;
  // Llama's RoPE: adjacent pairs turned by position * theta^(-2i/head_dim).
  void rope(const Tensor& x, std::span<const int32_t> positions, float theta) {
    rope(x, positions, llama_rope(theta));
  }
  // out = silu(gate) * up, all f32 [n, h].
  virtual void swiglu(const Tensor& gate, const Tensor& up, const Tensor& out) = 0;
  // out = a + b, all f32 of the same shape (out may alias a).
  virtual void add(const Tensor& a, const Tensor& b, const Tensor& out) = 0;
  // out[t, :] = x[t, :] + bias: x, out f32 [n, d] (out may alias x), bias f32
  // [d] (qwen2's q/k/v biases). (ABI 4.0)
  virtual void add_bias(const Tensor& x, const Tensor& bias, const Tensor& out) = 0;
  // out = gelu(gate) * up with GELU's tanh form, 0.5 g (1 + tanh(sqrt(2/pi)
  // (g + 0.044715 g^3))), all f32 [n, h] (gemma3's feed-forward). (ABI 4.0)
  virtual void geglu(const Tensor& gate, const Tensor& up, const Tensor& out) = 0;
  // out = x * factor, f32 of one shape (out may alias x): gemma3's embedding
  // scale. (ABI 4.0)
  virtual void scale(const Tensor& x, float factor, const Tensor& out) = 0;
  // Scaled dot-product attention with grouped KV heads (query head h reads kv
  // head h / (heads / kv_heads)). Token i attends to the entries of
  // views[view_of[i]] and the batch tokens in_batch lets it see, each kept only
  // if rule.sees(positions[i], its position) and, for stored entries, if
  // branch_sees(branches[i], its branch); stored entries first (segment
  // order), then batch tokens (batch order). Keys kept before RoPE (stored and
  // batch alike) are rotated at their positions as they are read; under
  // rule.reassign, keys below rule.sink are moved by rule.sink_shift(t)
  // (kv_view.h). A token that sees nothing gets zeros. out must not alias the
  // inputs.
  virtual void attention(const AttentionParams& params) = 0;
  // Attention as MaskedAttentionParams says: softmax over the keys whose mask
  // is finite, grouped KV heads as attention(); a query that sees nothing
  // gets zeros. (ABI 3.1)
  virtual void masked_attention(const MaskedAttentionParams& params) = 0;
  // The fixed-shape step's cache write, branch-free: cache = cache * keep +
  // insert x rows, per kv head. cache f32 [kv_heads, slots, head_dim]; keep
  // f32 [slots] of 0 or 1; insert f32 [slots, n] of 0 or 1, at most one 1 per
  // row and only where keep is 0; rows f32 [n, kv_heads, head_dim]. A slot
  // with keep 0 is overwritten whatever it held. (ABI 3.1)
  virtual void cache_update(const Tensor& cache, const Tensor& keep, const Tensor& insert,
                            const Tensor& rows) = 0;

  // The model's weight tensors, handed over once after init() and before any
  // op. The backend may move them where its kernels read them best (a GPU
  // backend uploads them; a CPU backend may copy them out of the file mapping
  // or repack them) by repointing each tensor's data at memory it owns for
  // its lifetime; dtype, shape and strides do not change. Tensors may share
  // data (a tied output matrix): they stay shared. All or nothing: returns
  // the bytes it now holds, every tensor moved, or 0 when every tensor still
  // points into the caller's memory (which must then outlive the backend).
  // The default keeps them in place.
  virtual Result<std::size_t> adopt_weights(std::span<Tensor* const> weights) {
    (void)weights;
    return std::size_t{0};
  }

  // K/V records of a named layout (core/compressor/kv_records.h) in this
  // backend's memory (docs/backends.md, step 5; ABI 8.2). A backend that
  // says yes keeps a store's records of that layout where it allocates them
  // (CacheStore::use_backend), encodes into them with encode_kv, passes the
  // batch's K/V through the codec with round_trip_kv, and its attention reads
  // a view's device records (KVSegment: codec set, k/v u8 tensors) itself.
  // The default: raw f32 only.
  virtual bool supports_kv_records(const KVRecordLayout& layout) const {
    return layout.format == KVRecordFormat::kF32;
  }
  // dst = the records of src's vectors: src f32 [a, b, c, width], dst u8 [a,
  // b, c, record bytes] (strides free but the innermost; the record of (i,
  // j, k) at dst's element (i, j, k, 0)). Recorded with the forward.
  virtual Status encode_kv(const Tensor& src, const Tensor& dst, const KVRecordLayout& layout);
  // dst = decode(encode(src)), both f32 [a, b, c, width]: the batch's K/V as
  // the store will hold them.
  virtual Status round_trip_kv(const Tensor& src, const Tensor& dst, const KVRecordLayout& layout);
};

// Whether `backend` keeps and reads `codec`'s records of one head's vector
// (heads_per_vector 1) itself: the one rule the stores' placement, the
// forward's round trip and the engine's split warning share.
bool backend_reads_records(const Backend& backend, const Compressor& codec, int heads_per_vector,
                           int head_dim);
// Whether a layer of `codec` keeps its K/V in `backend`'s memory: the memory
// is a device's, and the layer stores raw f32 or records the backend reads,
// of the size the codec encodes. The one rule of a store's placement
// (plugins/cache_common's KVPlacement) and of the cache's layer groups
// (CheckedCacheStore::init), so that every group places its K/V alike.
bool backend_keeps_kv(const Backend& backend, const Compressor& codec, int heads_per_vector,
                      int head_dim);

}  // namespace tessera
