#include "core/model/gguf_model.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>

#include "core/model/architecture.h"
#include "core/tokenizer/llama_cpp_token_rules.h"
#include "core/tokenizer/tokenizer_pipeline.h"
#include "core/util/suggest.h"

namespace tessera {
namespace {

// Hyper-parameters beyond these are not a model this runtime can run; a value
// past them is far more likely a corrupt file, and would make us allocate absurdly.
constexpr uint32_t kMaxWidth = 1u << 20;  // dim, hidden_dim
constexpr uint32_t kMaxLayers = 1u << 12;
constexpr uint32_t kMaxDiffusionBlock = 1024;  // tokens denoised together
constexpr uint32_t kMaxHeads = 1u << 12;

std::string shape_string(const std::vector<int64_t>& shape) {
  std::string out = "[";
  for (std::size_t d = 0; d < shape.size(); ++d) {
    if (d) out += ", ";
    out += std::to_string(shape[d]);
  }
  return out + "]";
}

// A required key: absent is DataLoss (the model file is incomplete).
Result<uint32_t> required_u32(const GgufFile& gguf, std::string_view key, uint32_t max) {
  if (!gguf.has(key))
    return data_loss(gguf.path() + ": missing required key '" + std::string(key) + "'");
  ASSIGN_OR_RETURN(uint32_t v, gguf.get_u32(key));
  if (v == 0 || v > max)
    return data_loss(gguf.path() + ": key '" + std::string(key) + "' is " + std::to_string(v) +
                     " (must be 1 to " + std::to_string(max) + ")");
  return v;
}

// A block-diffusion model names its block size and mask token; both or
// neither. The mask id is checked against the vocabulary once it is known.
Status read_diffusion_keys(const GgufFile& gguf, ModelConfig& c) {
  const bool has_block = gguf.has("diffusion.block_size");
  const bool has_mask = gguf.has("diffusion.mask_token_id");
  if (!has_block && !has_mask) return ok_status();
  if (has_block != has_mask)
    return data_loss(gguf.path() +
                     ": a block-diffusion model needs both diffusion.block_size and " +
                     "diffusion.mask_token_id; the file has only " +
                     (has_block ? "diffusion.block_size" : "diffusion.mask_token_id"));
  ASSIGN_OR_RETURN(uint32_t block, required_u32(gguf, "diffusion.block_size", kMaxDiffusionBlock));
  ASSIGN_OR_RETURN(uint32_t mask, gguf.get_u32("diffusion.mask_token_id"));
  c.diffusion_block_size = static_cast<int>(block);
  // Out of int32 range is out of any vocabulary: the vocabulary check names it.
  c.mask_token_id = static_cast<int32_t>(
      std::min<uint32_t>(mask, static_cast<uint32_t>(std::numeric_limits<int32_t>::max())));
  return ok_status();
}

// The head size: <arch>.attention.key_length when present (qwen3 and gemma3
// have head_dim != dim / heads), which value_length must equal (the cache
// holds keys and values of one width).
Result<uint32_t> read_head_dim(const GgufFile& gguf, const Architecture& arch, uint32_t dim,
                               uint32_t heads) {
  const std::string key_length = arch_key(arch, "attention.key_length");
  const std::string value_length = arch_key(arch, "attention.value_length");
  uint32_t head_dim = 0;
  if (gguf.has(key_length)) {
    ASSIGN_OR_RETURN(head_dim, required_u32(gguf, key_length, kMaxWidth));
  } else {
    if (dim % heads != 0)
      return data_loss(gguf.path() + ": " + arch_key(arch, "embedding_length") + " " +
                       std::to_string(dim) + " is not divisible by " +
                       arch_key(arch, "attention.head_count") + " " + std::to_string(heads) +
                       " (and there is no " + key_length + ")");
    head_dim = dim / heads;
  }
  if (gguf.has(value_length)) {
    ASSIGN_OR_RETURN(uint32_t v, required_u32(gguf, value_length, kMaxWidth));
    if (v != head_dim)
      return data_loss(gguf.path() + ": " + value_length + " " + std::to_string(v) +
                       " differs from the key head size " + std::to_string(head_dim) +
                       "; keys and values of different widths are not supported");
  }
  const std::string rope_dims = arch_key(arch, "rope.dimension_count");
  if (gguf.has(rope_dims)) {
    ASSIGN_OR_RETURN(uint32_t rot, gguf.get_u32(rope_dims));
    if (rot != head_dim)
      return data_loss(gguf.path() + ": " + rope_dims + " is " + std::to_string(rot) +
                       " but the head size is " + std::to_string(head_dim) +
                       "; RoPE over part of a head is not supported");
  }
  return head_dim;
}

Result<ModelConfig> read_config(const GgufFile& gguf) {
  ModelConfig c;
  if (!gguf.has("general.architecture"))
    return data_loss(gguf.path() + ": missing required key 'general.architecture'");
  ASSIGN_OR_RETURN(c.architecture, gguf.get_string("general.architecture"));
  const Architecture* found = find_architecture(c.architecture);
  if (found == nullptr)
    return unimplemented(gguf.path() + ": architecture '" + c.architecture +
                         "' is not supported (supported: " + supported_architectures() + ")");
  const Architecture& arch = *found;
  const auto key = [&](std::string_view suffix) { return arch_key(arch, suffix); };
  ASSIGN_OR_RETURN(c.name, gguf.get_string_or("general.name", ""));

  ASSIGN_OR_RETURN(uint32_t dim, required_u32(gguf, key("embedding_length"), kMaxWidth));
  ASSIGN_OR_RETURN(uint32_t hidden, required_u32(gguf, key("feed_forward_length"), kMaxWidth));
  ASSIGN_OR_RETURN(uint32_t layers, required_u32(gguf, key("block_count"), kMaxLayers));
  ASSIGN_OR_RETURN(uint32_t heads, required_u32(gguf, key("attention.head_count"), kMaxHeads));
  uint32_t kv_heads = heads;
  if (gguf.has(key("attention.head_count_kv"))) {
    ASSIGN_OR_RETURN(kv_heads, required_u32(gguf, key("attention.head_count_kv"), kMaxHeads));
  }
  ASSIGN_OR_RETURN(uint32_t context,
                   required_u32(gguf, key("context_length"),
                                static_cast<uint32_t>(std::numeric_limits<int32_t>::max())));
  ASSIGN_OR_RETURN(c.rms_eps, gguf.get_f32_or(key("attention.layer_norm_rms_epsilon"), 1e-5f));
  ASSIGN_OR_RETURN(c.rope_theta, gguf.get_f32_or(key("rope.freq_base"), 10000.0f));
  ASSIGN_OR_RETURN(uint32_t head_dim, read_head_dim(gguf, arch, dim, heads));

  if (heads % kv_heads != 0)
    return data_loss(gguf.path() + ": " + key("attention.head_count") + " " +
                     std::to_string(heads) + " is not divisible by " +
                     key("attention.head_count_kv") + " " + std::to_string(kv_heads));
  if (!(c.rms_eps > 0.0f) || !std::isfinite(c.rms_eps))
    return data_loss(gguf.path() + ": " + key("attention.layer_norm_rms_epsilon") +
                     " must be positive");
  if (!(c.rope_theta > 0.0f) || !std::isfinite(c.rope_theta))
    return data_loss(gguf.path() + ": " + key("rope.freq_base") + " must be positive");

  c.dim = static_cast<int>(dim);
  c.hidden_dim = static_cast<int>(hidden);
  c.n_layers = static_cast<int>(layers);
  c.n_heads = static_cast<int>(heads);
  c.n_kv_heads = static_cast<int>(kv_heads);
  c.head_dim = static_cast<int>(head_dim);
  c.context_length = static_cast<int>(context);
  RETURN_IF_ERROR(read_diffusion_keys(gguf, c));
  RETURN_IF_ERROR(read_layer_specs(gguf, arch, c));
  return c;
}

Status missing_tensor(const GgufFile& gguf, const std::string& name, const std::string& expected) {
  std::string msg =
      gguf.path() + ": missing tensor '" + name + "' (expected shape " + expected + ")";
  if (gguf.tensors().empty()) {
    msg += "; the file has no tensors at all (a vocabulary-only GGUF?)";
  } else {
    std::vector<std::string> names;
    for (const GgufTensorInfo& t : gguf.tensors()) names.push_back(t.name);
    msg += did_you_mean(name, names);
  }
  return data_loss(std::move(msg));
}

// The tensor `name` with exactly `shape` (outermost first) and a loadable dtype.
// `meaning` spells the expected shape in words for the error message.
Result<Tensor> expect_tensor(const GgufFile& gguf, const std::string& name,
                             const std::vector<int64_t>& shape, std::string_view meaning) {
  const std::string expected = shape_string(shape) + " = " + std::string(meaning);
  const GgufTensorInfo* info = gguf.find_tensor(name);
  if (info == nullptr) return missing_tensor(gguf, name, expected);
  if (info->shape() != shape)
    return data_loss(gguf.path() + ": tensor '" + name + "' has shape " + info->shape_string() +
                     ", expected " + expected);
  return gguf.tensor(*info);
}

// Like expect_tensor, but absent gives an empty tensor (data null).
Result<Tensor> optional_tensor(const GgufFile& gguf, const std::string& name,
                               const std::vector<int64_t>& shape, std::string_view meaning) {
  if (gguf.find_tensor(name) == nullptr) return Tensor{};
  return expect_tensor(gguf, name, shape, meaning);
}

// An f32 tensor (norms, biases, RoPE factors: the forward reads them as f32,
// and converters keep them so).
Result<Tensor> expect_f32(const GgufFile& gguf, const std::string& name, Tensor t) {
  if (t.data != nullptr && t.dtype != DType::kF32)
    return unimplemented(gguf.path() + ": tensor '" + name + "' is " +
                         std::string(dtype_name(t.dtype)) +
                         "; the forward needs it in f32 (converters keep norms and biases f32)");
  return t;
}

// An optional f32 vector of `size` (rope_freqs.weight), empty when absent.
Result<Tensor> f32_tensor_or_empty(const GgufFile& gguf, const std::string& name, int64_t size) {
  ASSIGN_OR_RETURN(Tensor t, optional_tensor(gguf, name, {size}, "[head_dim / 2]"));
  return expect_f32(gguf, name, t);
}

// Tensors llama.cpp would use that this forward has no place for: refused
// rather than silently left out.
Status refuse_unused_tensors(const GgufFile& gguf) {
  static constexpr std::string_view kUnsupported[] = {"attn_qkv.weight", "attn_output.bias",
                                                      "ffn_gate.bias",   "ffn_up.bias",
                                                      "ffn_down.bias",   "output.bias"};
  for (const GgufTensorInfo& t : gguf.tensors())
    for (std::string_view suffix : kUnsupported)
      if (t.name.size() >= suffix.size() &&
          t.name.compare(t.name.size() - suffix.size(), suffix.size(), suffix) == 0)
        return unimplemented(gguf.path() + ": tensor '" + t.name +
                             "' is not supported by this runtime (no fused QKV, output or "
                             "feed-forward biases)");
  return ok_status();
}

// A special token id: absent gives `fallback`; -1 (or u32 0xffffffff) means none.
Result<int32_t> special_id(const GgufFile& gguf, std::string_view key, int32_t fallback,
                           int32_t vocab_size) {
  if (!gguf.has(key)) return fallback;
  ASSIGN_OR_RETURN(int64_t id, gguf.get_i64(key));
  if (id == -1 || id == 0xffffffffLL) return -1;
  if (id < 0 || id >= vocab_size)
    return data_loss(gguf.path() + ": key '" + std::string(key) + "' is token " +
                     std::to_string(id) + ", outside the vocabulary of " +
                     std::to_string(vocab_size) + " tokens");
  return static_cast<int32_t>(id);
}

// The byte-pair side of a GGUF vocabulary: merges, the named pre-tokenizer
// and the defaults llama.cpp gives such vocabularies.
Status read_byte_pair_keys(const GgufFile& gguf, Vocabulary& vocab) {
  const std::string& path = gguf.path();
  vocab.kind = VocabularyKind::kBytePairs;
  vocab.add_space_prefix = false;
  if (!gguf.has("tokenizer.ggml.merges"))
    return data_loss(path + ": a 'gpt2' vocabulary needs tokenizer.ggml.merges; the file has none");
  ASSIGN_OR_RETURN(vocab.merges, gguf.get_string_array("tokenizer.ggml.merges"));
  ASSIGN_OR_RETURN(vocab.pre, gguf.get_string_or("tokenizer.ggml.pre", "default"));
  auto pipeline = pipeline_for_pre(vocab.pre);
  if (!pipeline.ok()) return pipeline.status().with_context(path);
  vocab.pipeline = std::make_shared<const TokenizerPipeline>(std::move(pipeline).value());
  vocab.ignore_merges = pre_ignores_merges(vocab.pre);
  vocab.add_bos = vocab.ignore_merges;  // llama.cpp: Llama 3 starts with BOS, others do not
  return ok_status();
}

}  // namespace

Result<Vocabulary> load_gguf_vocabulary(const GgufFile& gguf) {
  const std::string& path = gguf.path();
  if (!gguf.has("tokenizer.ggml.model") || !gguf.has("tokenizer.ggml.tokens"))
    return data_loss(path +
                     ": no tokenizer in this file (tokenizer.ggml.model and "
                     "tokenizer.ggml.tokens are required)");
  ASSIGN_OR_RETURN(std::string model, gguf.get_string("tokenizer.ggml.model"));
  if (model != "llama" && model != "gpt2")
    return unimplemented(path + ": tokenizer.ggml.model is '" + model +
                         "'; supported: 'llama' (SentencePiece) and 'gpt2' (byte-pair BPE)");

  Vocabulary vocab;
  ASSIGN_OR_RETURN(vocab.pieces, gguf.get_string_array("tokenizer.ggml.tokens"));
  const std::size_t n = vocab.pieces.size();
  if (n == 0) return data_loss(path + ": tokenizer.ggml.tokens is empty");
  if (n > static_cast<std::size_t>(std::numeric_limits<int32_t>::max()))
    return data_loss(path + ": tokenizer.ggml.tokens has too many tokens");
  if (model == "gpt2") RETURN_IF_ERROR(read_byte_pair_keys(gguf, vocab));
  const bool bpe = vocab.kind == VocabularyKind::kBytePairs;
  if (gguf.has("tokenizer.ggml.scores")) {
    ASSIGN_OR_RETURN(vocab.scores, gguf.get_f32_array("tokenizer.ggml.scores"));
    if (vocab.scores.size() != n)
      return data_loss(path + ": tokenizer.ggml.scores has " + std::to_string(vocab.scores.size()) +
                       " entries for " + std::to_string(n) + " tokens");
  } else {
    vocab.scores.assign(n, 0.0f);
  }

  if (gguf.has("tokenizer.ggml.token_type")) {
    ASSIGN_OR_RETURN(std::vector<int64_t> types, gguf.get_int_array("tokenizer.ggml.token_type"));
    if (types.size() != n)
      return data_loss(path + ": tokenizer.ggml.token_type has " + std::to_string(types.size()) +
                       " entries for " + std::to_string(n) + " tokens");
    vocab.types.resize(n);
    for (std::size_t t = 0; t < n; ++t) {
      if (types[t] < 0 || types[t] > static_cast<int64_t>(TokenType::kByte))
        return data_loss(path + ": tokenizer.ggml.token_type of token " + std::to_string(t) +
                         " is " + std::to_string(types[t]) + " (valid: 0 to 6)");
      vocab.types[t] = static_cast<TokenType>(types[t]);
    }
  } else {
    vocab.types.assign(n, TokenType::kNormal);
  }

  const auto size = static_cast<int32_t>(n);
  // llama.cpp's defaults for an absent key: 1/2/0 for SentencePiece; 11 for BOS
  // and EOS and no unknown token for byte-pair vocabularies.
  const int32_t default_bos = bpe ? std::min<int32_t>(11, size - 1) : 1;
  ASSIGN_OR_RETURN(vocab.bos_id,
                   special_id(gguf, "tokenizer.ggml.bos_token_id", default_bos, size));
  ASSIGN_OR_RETURN(vocab.eos_id,
                   special_id(gguf, "tokenizer.ggml.eos_token_id", bpe ? default_bos : 2, size));
  ASSIGN_OR_RETURN(vocab.unk_id,
                   special_id(gguf, "tokenizer.ggml.unknown_token_id", bpe ? -1 : 0, size));
  ASSIGN_OR_RETURN(vocab.eot_id, special_id(gguf, "tokenizer.ggml.eot_token_id", -1, size));
  ASSIGN_OR_RETURN(vocab.add_space_prefix,
                   gguf.get_bool_or("tokenizer.ggml.add_space_prefix", vocab.add_space_prefix));
  ASSIGN_OR_RETURN(vocab.add_bos, gguf.get_bool_or("tokenizer.ggml.add_bos_token", vocab.add_bos));
  ASSIGN_OR_RETURN(vocab.add_eos, gguf.get_bool_or("tokenizer.ggml.add_eos_token", false));
  ASSIGN_OR_RETURN(vocab.chat_template, gguf.get_string_or("tokenizer.chat_template", ""));
  apply_llama_cpp_token_rules(vocab);
  return vocab;
}

namespace {

// The vocabulary size is whatever token_embd holds: [vocab, dim].
Status read_vocab_size(const GgufFile& gguf, ModelConfig& c) {
  const GgufTensorInfo* embd = gguf.find_tensor("token_embd.weight");
  const std::string embd_shape = "[vocab, " + std::to_string(c.dim) + "]";
  if (embd == nullptr) return missing_tensor(gguf, "token_embd.weight", embd_shape);
  if (embd->n_dims != 2 || embd->ne[0] != c.dim ||
      embd->ne[1] > std::numeric_limits<int32_t>::max())
    return data_loss(gguf.path() + ": tensor 'token_embd.weight' has shape " +
                     embd->shape_string() + ", expected " + embd_shape);
  c.vocab_size = static_cast<int>(embd->ne[1]);
  return ok_status();
}

// Layer l's weights, checked against the config; what the file holds decides
// spec.qkv_bias, the architecture the optional norms.
Status load_layer(const GgufFile& gguf, const ModelConfig& c, int l, LayerWeights& L,
                  LayerSpec& spec) {
  const int64_t dim = c.dim;
  const int64_t q_dim = static_cast<int64_t>(c.n_heads) * c.head_dim;
  const int64_t kv_dim = static_cast<int64_t>(c.n_kv_heads) * c.head_dim;
  const int64_t hidden = c.hidden_dim;
  const int64_t head_dim = c.head_dim;
  const std::string blk = "blk." + std::to_string(l) + ".";
  const auto f32_tensor = [&](const std::string& name, Result<Tensor> t) -> Result<Tensor> {
    if (!t.ok()) return t.status();
    return expect_f32(gguf, name, *t);
  };
  ASSIGN_OR_RETURN(L.attn_norm, expect_tensor(gguf, blk + "attn_norm.weight", {dim}, "[dim]"));
  ASSIGN_OR_RETURN(
      L.wq, expect_tensor(gguf, blk + "attn_q.weight", {q_dim, dim}, "[n_heads * head_dim, dim]"));
  ASSIGN_OR_RETURN(L.wk, expect_tensor(gguf, blk + "attn_k.weight", {kv_dim, dim},
                                       "[n_kv_heads * head_dim, dim]"));
  ASSIGN_OR_RETURN(L.wv, expect_tensor(gguf, blk + "attn_v.weight", {kv_dim, dim},
                                       "[n_kv_heads * head_dim, dim]"));
  ASSIGN_OR_RETURN(L.wo, expect_tensor(gguf, blk + "attn_output.weight", {dim, q_dim},
                                       "[dim, n_heads * head_dim]"));
  ASSIGN_OR_RETURN(L.ffn_norm, expect_tensor(gguf, blk + "ffn_norm.weight", {dim}, "[dim]"));
  ASSIGN_OR_RETURN(
      L.w1, expect_tensor(gguf, blk + "ffn_gate.weight", {hidden, dim}, "[hidden_dim, dim]"));
  ASSIGN_OR_RETURN(
      L.w2, expect_tensor(gguf, blk + "ffn_down.weight", {dim, hidden}, "[dim, hidden_dim]"));
  ASSIGN_OR_RETURN(L.w3,
                   expect_tensor(gguf, blk + "ffn_up.weight", {hidden, dim}, "[hidden_dim, dim]"));
  // q/k/v biases: optional for every architecture, as in llama.cpp (qwen2 has them).
  const std::string bq = blk + "attn_q.bias", bk = blk + "attn_k.bias", bv = blk + "attn_v.bias";
  ASSIGN_OR_RETURN(L.bq,
                   f32_tensor(bq, optional_tensor(gguf, bq, {q_dim}, "[n_heads * head_dim]")));
  ASSIGN_OR_RETURN(L.bk,
                   f32_tensor(bk, optional_tensor(gguf, bk, {kv_dim}, "[n_kv_heads * head_dim]")));
  ASSIGN_OR_RETURN(L.bv,
                   f32_tensor(bv, optional_tensor(gguf, bv, {kv_dim}, "[n_kv_heads * head_dim]")));
  const int biases = (L.bq.data != nullptr) + (L.bk.data != nullptr) + (L.bv.data != nullptr);
  if (biases != 0 && biases != 3)
    return data_loss(gguf.path() + ": layer " + std::to_string(l) +
                     " has some of attn_q.bias, attn_k.bias and attn_v.bias but not all three");
  spec.qkv_bias = biases == 3;
  if (spec.qk_norm) {
    const std::string qn = blk + "attn_q_norm.weight", kn = blk + "attn_k_norm.weight";
    ASSIGN_OR_RETURN(L.q_norm, f32_tensor(qn, expect_tensor(gguf, qn, {head_dim}, "[head_dim]")));
    ASSIGN_OR_RETURN(L.k_norm, f32_tensor(kn, expect_tensor(gguf, kn, {head_dim}, "[head_dim]")));
  }
  if (spec.post_attention_norm) {
    const std::string name = blk + "post_attention_norm.weight";
    ASSIGN_OR_RETURN(L.post_attn_norm, f32_tensor(name, expect_tensor(gguf, name, {dim}, "[dim]")));
  }
  if (spec.post_ffn_norm) {
    const std::string name = blk + "post_ffw_norm.weight";
    ASSIGN_OR_RETURN(L.post_ffn_norm, f32_tensor(name, expect_tensor(gguf, name, {dim}, "[dim]")));
  }
  return ok_status();
}

// The weights after the layers: Llama 3's RoPE factors, the final norm and
// the classifier (tied to the embedding when absent).
Status load_head_weights(const GgufFile& gguf, ModelConfig& c, ModelWeights& w) {
  const int64_t dim = c.dim;
  const int64_t vocab = c.vocab_size;
  // Llama 3's RoPE factors: one tensor for every layer (llama.cpp duplicates blk.0's), [head_dim /
  // 2].
  if (find_architecture(c.architecture)->rope_freqs) {
    ASSIGN_OR_RETURN(w.rope_freqs, f32_tensor_or_empty(gguf, "rope_freqs.weight", c.head_dim / 2));
    if (w.rope_freqs.data != nullptr)
      for (LayerSpec& spec : c.layers) spec.rope_freq_factors = true;
  }
  RETURN_IF_ERROR(refuse_unused_tensors(gguf));
  ASSIGN_OR_RETURN(w.output_norm, expect_tensor(gguf, "output_norm.weight", {dim}, "[dim]"));
  if (gguf.find_tensor("output.weight") != nullptr) {
    ASSIGN_OR_RETURN(w.output, expect_tensor(gguf, "output.weight", {vocab, dim}, "[vocab, dim]"));
  } else {
    w.output = w.token_embedding;  // tied classifier
  }
  return ok_status();
}

// Tensors of a type the runtime cannot load are none of the expected ones
// (those were checked already); TensorInfo cannot describe them, so they are
// left out (`tessera inspect` reads GgufFile directly).
std::vector<TensorInfo> describe_tensors(const GgufFile& gguf) {
  std::vector<TensorInfo> out;
  for (const GgufTensorInfo& t : gguf.tensors()) {
    const auto dtype = ggml_type_to_dtype(t.type);
    if (!dtype) continue;
    out.push_back(TensorInfo{t.name, *dtype, t.shape(), t.file_offset});
  }
  return out;
}

}  // namespace

Result<LoadedModel> load_gguf_model(const GgufFile& gguf) {
  LoadedModel m;
  m.path = gguf.path();
  m.format = "gguf";
  m.file = gguf.file();
  for (const GgufKeyValue& kv : gguf.metadata())
    m.metadata.emplace_back(kv.key, kv.value.to_string());
  ASSIGN_OR_RETURN(m.config, read_config(gguf));
  ModelConfig& c = m.config;
  RETURN_IF_ERROR(read_vocab_size(gguf, c));
  ASSIGN_OR_RETURN(m.weights.token_embedding,
                   expect_tensor(gguf, "token_embd.weight", {c.vocab_size, c.dim}, "[vocab, dim]"));
  m.weights.layers.resize(static_cast<std::size_t>(c.n_layers));
  for (int l = 0; l < c.n_layers; ++l)
    RETURN_IF_ERROR(load_layer(gguf, c, l, m.weights.layers[static_cast<std::size_t>(l)],
                               c.layers[static_cast<std::size_t>(l)]));
  RETURN_IF_ERROR(load_head_weights(gguf, c, m.weights));
  if (c.block_diffusion() && c.mask_token_id >= c.vocab_size)
    return data_loss(m.path + ": diffusion.mask_token_id " + std::to_string(c.mask_token_id) +
                     " is not a token of the model's " + std::to_string(c.vocab_size) +
                     "-token vocabulary");
  ASSIGN_OR_RETURN(m.vocab, load_gguf_vocabulary(gguf));
  if (m.vocab.size() != c.vocab_size)
    return data_loss(m.path + ": the vocabulary has " + std::to_string(m.vocab.size()) +
                     " tokens but token_embd.weight has " + std::to_string(c.vocab_size) + " rows");
  m.tensors = describe_tensors(gguf);
  return m;
}

}  // namespace tessera
