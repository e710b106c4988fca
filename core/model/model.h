// A loaded model: hyper-parameters, weight views into the mapped file, and the
// vocabulary. Both loaders (GGUF and llama2.c) produce this same structure.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/model/layer_spec.h"
#include "core/status/status.h"
#include "core/tensor/tensor.h"

namespace tessera {

class MappedFile;

// The hyper-parameters of the llama family and its relatives (qwen2, qwen3,
// gemma3): what differs per layer is in `layers` (core/model/layer_spec.h).
struct ModelConfig {
  std::string architecture = "llama";  // "llama" | "qwen2" | "qwen3" | "gemma3"
  std::string name;
  int dim = 0;         // embedding width
  int hidden_dim = 0;  // feed-forward width
  int n_layers = 0;
  int n_heads = 0;
  int n_kv_heads = 0;  // < n_heads means grouped-query attention
  int head_dim = 0;    // <arch>.attention.key_length, else dim / n_heads
  int vocab_size = 0;
  int context_length = 0;  // as the file states it
  float rms_eps = 1e-5f;
  float rope_theta = 10000.0f;  // <arch>.rope.freq_base (gemma3: of its global layers)
  // The token embedding is multiplied by this before the first layer (gemma3: sqrt(dim)).
  float embedding_scale = 1.0f;
  // Attention's query scale; 0 means 1/sqrt(head_dim) (gemma3 27B differs).
  float attention_scale = 0.0f;
  // Logits become cap * tanh(logits / cap) when > 0 (<arch>.final_logit_softcapping).
  float final_logit_softcap = 0.0f;
  // One per layer; empty means llama's layer (layer_specs()).
  std::vector<LayerSpec> layers;
  // Block diffusion (SDAR-style; GGUF diffusion.block_size and
  // diffusion.mask_token_id): the model denoises blocks of this many tokens,
  // aligned to absolute positions, and `mask_token_id` marks a token still to
  // be decoded. 0 and -1 for an autoregressive model.
  int diffusion_block_size = 0;
  int32_t mask_token_id = -1;

  bool block_diffusion() const { return diffusion_block_size > 0; }
};

// Views into the mapped file. Matrices are row-major [out, in]. The tensors
// after w3 are there when the layer's LayerSpec says so (data null otherwise).
struct LayerWeights {
  Tensor attn_norm;       // [dim]
  Tensor wq;              // [n_heads * head_dim, dim]
  Tensor wk;              // [n_kv_heads * head_dim, dim]
  Tensor wv;              // [n_kv_heads * head_dim, dim]
  Tensor wo;              // [dim, n_heads * head_dim]
  Tensor ffn_norm;        // [dim]
  Tensor w1;              // gate [hidden, dim]
  Tensor w2;              // down [dim, hidden]
  Tensor w3;              // up   [hidden, dim]
  Tensor bq;              // f32 [n_heads * head_dim]  (qkv_bias)
  Tensor bk;              // f32 [n_kv_heads * head_dim]
  Tensor bv;              // f32 [n_kv_heads * head_dim]
  Tensor q_norm;          // f32 [head_dim]  (qk_norm)
  Tensor k_norm;          // f32 [head_dim]
  Tensor post_attn_norm;  // f32 [dim]  (post_attention_norm)
  Tensor post_ffn_norm;   // f32 [dim]  (post_ffn_norm)
};

struct ModelWeights {
  Tensor token_embedding;  // [vocab, dim]
  std::vector<LayerWeights> layers;
  Tensor output_norm;  // [dim]
  Tensor output;       // [vocab, dim]; the embedding itself when shared
  Tensor rope_freqs;   // f32 [head_dim / 2] (Llama 3; data null when absent)
};

enum class TokenType : int32_t {
  kUndefined = 0,
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,
  kUserDefined = 4,
  kUnused = 5,
  kByte = 6,
};

// Which tokenizer a vocabulary belongs to (GGUF tokenizer.ggml.model).
enum class VocabularyKind {
  kSentencePiece,  // "llama": score-ordered merges over UTF-8 characters, U+2581 for spaces
  kBytePairs,      // "gpt2": rank-ordered merges (byte-level or byte-fallback BPE)
};

// A token the text is split on before any other processing (Hugging Face
// added_tokens). `special` ones become control tokens and are matched only
// when the caller asks for it (parse_special); the others always are.
struct AddedToken {
  int32_t id = -1;
  bool special = false;
  bool lstrip = false;  // swallows the whitespace before it
  bool rstrip = false;  // swallows the whitespace after it
  bool single_word = false;
  bool normalized = false;
};

struct TokenizerPipeline;  // core/tokenizer/tokenizer_pipeline.h

// A vocabulary. SentencePiece pieces use U+2581 ("▁") for a space, as in GGUF
// (the llama2.c loader converts its plain spaces on load); byte-level BPE
// pieces use the GPT-2 byte alphabet ("Ġ" for a space).
struct Vocabulary {
  VocabularyKind kind = VocabularyKind::kSentencePiece;
  std::vector<std::string> pieces;
  std::vector<float> scores;
  std::vector<TokenType> types;
  int32_t bos_id = 1;
  int32_t eos_id = 2;
  int32_t unk_id = 0;
  int32_t eot_id = -1;  // end of turn (<|im_end|>, <|eot_id|>, <end_of_turn>); -1: none
  bool add_space_prefix = true;
  bool add_bos = true;  // a new sequence starts with BOS (GGUF tokenizer.ggml.add_bos_token)
  bool add_eos = false;

  // Byte-pair vocabularies: merges as "left right", highest priority first.
  std::vector<std::string> merges;
  std::string pre;             // the pre-tokenizer's name (GGUF tokenizer.ggml.pre)
  bool ignore_merges = false;  // a word that is itself a token is not merged
  bool byte_fallback = false;  // unknown characters become <0xHH> tokens
  bool fuse_unk = false;       // consecutive unknown characters become one unk
  std::vector<AddedToken> added_tokens;
  // How text is normalised, split and decoded; set for byte-pair vocabularies
  // by the loaders (from `pre` or from tokenizer.json).
  std::shared_ptr<const TokenizerPipeline> pipeline;
  std::string chat_template;  // Jinja source (tokenizer.chat_template); empty: none

  int32_t size() const { return static_cast<int32_t>(pieces.size()); }
};

// One tensor as stored in the file, for `tessera inspect`.
struct TensorInfo {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;  // outermost first
  uint64_t offset = 0;         // bytes from the start of the file
};

struct LoadedModel {
  std::string path;
  std::string format;  // "gguf" | "llama2c"
  ModelConfig config;
  ModelWeights weights;
  Vocabulary vocab;
  std::vector<TensorInfo> tensors;
  // Metadata as printable key/value text, in file order (GGUF: every key).
  std::vector<std::pair<std::string, std::string>> metadata;
  // Keeps the weight views valid.
  std::shared_ptr<const MappedFile> file;
  std::shared_ptr<const MappedFile> tokenizer_file;
};

// Loads a GGUF file, or a llama2.c checkpoint together with its tokenizer file
// (tokenizer_path is required for .bin checkpoints and ignored for GGUF).
// Every problem with the files is a Status naming the file and what is wrong.
Result<LoadedModel> load_model(const std::string& path,
                               const std::optional<std::string>& tokenizer_path = std::nullopt);

// Reads only the vocabulary: from a GGUF (a vocabulary-only GGUF works), a
// Hugging Face tokenizer.json (with tokenizer_config.json beside it when
// present) or a llama2.c tokenizer .bin.
Result<Vocabulary> load_vocabulary(const std::string& path);

// A vocabulary from `path` (as load_vocabulary) to use with a model whose
// classifier has `rows` outputs (config model.tokenizer over a GGUF): fewer
// tokens are padded with unused "[PAD<id>]" tokens, as llama.cpp's converter
// pads; more are InvalidArgument naming both sizes.
Result<Vocabulary> load_vocabulary_for_rows(const std::string& path, int rows);

}  // namespace tessera
