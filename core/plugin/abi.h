// The plugin ABI. A shared plugin carries two things:
//  - an ABI stamp, plain bytes in its own ELF section (.tessera_abi), which
//    the registry reads from the file before the library is loaded: ABI
//    version, standard library, and the hash of the SDK headers it was
//    compiled against. A mismatch is refused without running any plugin code,
//    not even its static constructors;
//  - the descriptor, the one exported symbol, read after loading: the
//    manifest and the create function.
// docs/plugins.md says exactly what is checked and what is not.
#pragma once

#include <cstdint>

#include "core/plugin/options.h"
#include "core/plugin/plugin_object.h"
#include "core/plugin/sdk_hash.h"
#include "core/plugin/services.h"
#include "core/status/status.h"

// 2.0: the batch, attention and cache contracts (docs/architecture.md); the
// ABI stamp and the SDK hash. 2.1: Compressor::dot_encoded_heads and
// accumulate_encoded_heads appended. 2.2: CacheGeometry::heads_per_vector and
// KVSegment::heads_per_record appended (cache.codec_span). 2.3:
// BackendOptions::weights and Backend::adopt_weights appended (backend-owned
// weights). 3.0: plugin services (create() takes them), per-lane decode state
// and the lane-based Proposer / Verifier, branch ids on batch tokens and
// stored entries, CacheStore::append with branches, bytes copied. 3.1:
// Verifier::prefill and takes_drafts appended; ModelConfig's block-diffusion
// fields and the diffusion counters appended; the fixed-shape step's
// Backend::masked_attention and cache_update, CacheStore::dense_layer and
// append_in_place appended. 3.2: K/V restoration: TransientKV
// (core/cache/transient_kv.h); ForwardOptions::transient, read_store and
// unwindowed, Transformer::pending_k/pending_v and scratch_bytes appended;
// the restoration counters appended to DecodeCounters;
// PluginServices::make_sized_transformer appended. 4.0: architectures
// (qwen2, qwen3, llama 3, gemma3): Backend::rope takes a RopeSpec,
// AttentionParams::rope replaces rope_theta, Backend::add_bias, geglu and
// scale; ModelConfig's layer descriptions (LayerSpec) and model-wide scales,
// LayerWeights' biases and extra norms, ModelWeights::rope_freqs. 5.0:
// layer groups: CheckedCacheStore holds a CheckedStore per group of layers
// (a model's sliding-window layers kept apart). 6.0: continuous batching:
// a Scheduler plans steps (plan() over LaneViews) instead of running a
// request; Verifier::chunks_prefill and feed_and_verify (PrefillChunk);
// SequenceState::last_draft; GenerationRequest and its stats move to
// core/schedule/generation.h. 6.1: CacheStore::sequence_bytes appended
// (SequenceBytes: a sequence's K/V bytes, held and shared);
// SequenceState::proposer appended (decode.alternate_proposers). 7.0:
// token log-probabilities and penalties: LaneStep::logprobs / top_logprobs
// (TokenLogprob, score_token), SequenceState::logprobs / step_logprobs;
// SamplingParams' presence / frequency penalties and the Sampler's emission
// counts (observe, penalised: its layout changed); ScoredTokenSink. 7.1:
// PluginServices::find_file appended (a file a plugin option names, found
// like model.path: core/io/file_lookup.h). 8.0: memory that knows where it
// lives (docs/backends.md, step 1): Buffer::usage / host_data (data() gone),
// Tensor::buffer / offset, Backend::allocate takes a BufferUsage, Backend::
// write / read / copy / synchronize / devices / supports_op (BackendOp),
// DeviceInfo's device fields. 8.1: K/V in the backend's memory (step 2):
// CacheStore::use_backend appended (a store may keep its K/V in memory the
// backend allocates); Backend::copy takes strided tensors. 8.2: K/V records
// on a device (step 5): Compressor::record_layout, Backend::
// supports_kv_records / encode_kv / round_trip_kv appended, DType::kU8, and a
// KVSegment may hold device records (KVSegment::device_records). 8.3: the
// visibility once per forward (step 3): AttentionParams::visibility_id
// appended. 8.4: half-float K/V records, KVRecordFormat::kF16 / kBF16
// appended (the f16 and bf16 codecs; the CPU attends them as rows). 8.5:
// prefix caching: CacheStore::shared_block_size / shared_block_bytes /
// hold_block / drop_block / adopt_blocks appended (the paged store shares
// blocks; the core keys them, core/cache/prefix_cache.h).
#ifndef TESSERA_ABI_MAJOR
#define TESSERA_ABI_MAJOR 8
#endif
#ifndef TESSERA_ABI_MINOR
#define TESSERA_ABI_MINOR 5
#endif

#define TESSERA_STRINGIFY_INNER(x) #x
#define TESSERA_STRINGIFY(x) TESSERA_STRINGIFY_INNER(x)

#if defined(_GLIBCXX_RELEASE)
#define TESSERA_STDLIB_TAG                                                       \
  "libstdc++" TESSERA_STRINGIFY(_GLIBCXX_RELEASE) "-cxx11abi" TESSERA_STRINGIFY( \
      _GLIBCXX_USE_CXX11_ABI)
#elif defined(_LIBCPP_VERSION)
#define TESSERA_STDLIB_TAG "libc++" TESSERA_STRINGIFY(_LIBCPP_VERSION)
#else
#define TESSERA_STDLIB_TAG "unknown-stdlib"
#endif

#if defined(__clang__)
#define TESSERA_COMPILER_TAG "clang-" TESSERA_STRINGIFY(__clang_major__)
#elif defined(__GNUC__)
#define TESSERA_COMPILER_TAG "gcc-" TESSERA_STRINGIFY(__GNUC__)
#else
#define TESSERA_COMPILER_TAG "unknown-compiler"
#endif

// "<standard library>;<compiler>": the first part must match the core's; the
// second is shown in messages only (objects built by gcc and clang against the
// same libstdc++ interoperate).
#define TESSERA_BUILD_FINGERPRINT TESSERA_STDLIB_TAG ";" TESSERA_COMPILER_TAG

// The exported symbol's name in a shared plugin.
#define TESSERA_PLUGIN_SYMBOL tessera_plugin_descriptor
// The ELF section that holds a shared plugin's TesseraAbiStamp.
#define TESSERA_ABI_SECTION ".tessera_abi"
#define TESSERA_ABI_MAGIC "TSRA-ABI"

extern "C" {

// Plain bytes, no pointers: readable from the file without loading it. Every
// string is NUL-terminated within its array.
struct TesseraAbiStamp {
  char magic[8];  // TESSERA_ABI_MAGIC without its NUL
  uint32_t abi_major;
  uint32_t abi_minor;
  char fingerprint[64];  // TESSERA_BUILD_FINGERPRINT
  char sdk_hash[72];     // TESSERA_SDK_HASH: SHA-256 of the core headers, hex
};

struct TesseraPluginDescriptor {
  // Stable prefix (every ABI version).
  uint32_t abi_major;
  uint32_t abi_minor;
  uint32_t struct_size;  // sizeof(TesseraPluginDescriptor) as the plugin saw it
  const char* build_fingerprint;
  const char* sdk_hash;  // TESSERA_SDK_HASH (embedded plugins are checked through this)

  // The manifest (since 1.0).
  const char* kind;  // backend | compressor | cache | proposer | verifier | scheduler
  const char* name;  // the name used in TOML, e.g. "cpu"
  const char* version;
  const char* description;
  const tessera::OptionSpec* options;  // option_count entries, static storage
  uint32_t option_count;
  // Creates the plugin object with its checked options and the core's
  // services (null where there are none: a tool that only lists plugins).
  // Returns nullptr and sets *status on failure. The caller owns the object;
  // it must be destroyed before the library unloads. (ABI 3.0: services.)
  tessera::PluginObject* (*create)(const tessera::OptionValues* options,
                                   tessera::PluginServices* services, tessera::Status* status);
};

}  // extern "C"
