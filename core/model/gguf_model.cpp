#include "core/model/gguf_model.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>

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

Result<ModelConfig> read_config(const GgufFile& gguf) {
  ModelConfig c;
  if (!gguf.has("general.architecture"))
    return data_loss(gguf.path() + ": missing required key 'general.architecture'");
  ASSIGN_OR_RETURN(c.architecture, gguf.get_string("general.architecture"));
  if (c.architecture != "llama")
    return unimplemented(gguf.path() + ": architecture '" + c.architecture +
                         "' is not supported (supported: llama)");
  ASSIGN_OR_RETURN(c.name, gguf.get_string_or("general.name", ""));

  ASSIGN_OR_RETURN(uint32_t dim, required_u32(gguf, "llama.embedding_length", kMaxWidth));
  ASSIGN_OR_RETURN(uint32_t hidden, required_u32(gguf, "llama.feed_forward_length", kMaxWidth));
  ASSIGN_OR_RETURN(uint32_t layers, required_u32(gguf, "llama.block_count", kMaxLayers));
  ASSIGN_OR_RETURN(uint32_t heads, required_u32(gguf, "llama.attention.head_count", kMaxHeads));
  uint32_t kv_heads = heads;
  if (gguf.has("llama.attention.head_count_kv")) {
    ASSIGN_OR_RETURN(kv_heads, required_u32(gguf, "llama.attention.head_count_kv", kMaxHeads));
  }
  ASSIGN_OR_RETURN(uint32_t context,
                   required_u32(gguf, "llama.context_length",
                                static_cast<uint32_t>(std::numeric_limits<int32_t>::max())));
  ASSIGN_OR_RETURN(c.rms_eps, gguf.get_f32_or("llama.attention.layer_norm_rms_epsilon", 1e-5f));
  ASSIGN_OR_RETURN(c.rope_theta, gguf.get_f32_or("llama.rope.freq_base", 10000.0f));

  if (dim % heads != 0)
    return data_loss(gguf.path() + ": llama.embedding_length " + std::to_string(dim) +
                     " is not divisible by llama.attention.head_count " + std::to_string(heads));
  if (heads % kv_heads != 0)
    return data_loss(gguf.path() + ": llama.attention.head_count " + std::to_string(heads) +
                     " is not divisible by llama.attention.head_count_kv " +
                     std::to_string(kv_heads));
  if (!(c.rms_eps > 0.0f) || !std::isfinite(c.rms_eps))
    return data_loss(gguf.path() + ": llama.attention.layer_norm_rms_epsilon must be positive");
  if (!(c.rope_theta > 0.0f) || !std::isfinite(c.rope_theta))
    return data_loss(gguf.path() + ": llama.rope.freq_base must be positive");

  c.dim = static_cast<int>(dim);
  c.hidden_dim = static_cast<int>(hidden);
  c.n_layers = static_cast<int>(layers);
  c.n_heads = static_cast<int>(heads);
  c.n_kv_heads = static_cast<int>(kv_heads);
  c.head_dim = c.dim / c.n_heads;
  c.context_length = static_cast<int>(context);
  RETURN_IF_ERROR(read_diffusion_keys(gguf, c));
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
  return vocab;
}

Result<LoadedModel> load_gguf_model(const GgufFile& gguf) {
  LoadedModel m;
  m.path = gguf.path();
  m.format = "gguf";
  m.file = gguf.file();
  for (const GgufKeyValue& kv : gguf.metadata())
    m.metadata.emplace_back(kv.key, kv.value.to_string());

  ASSIGN_OR_RETURN(m.config, read_config(gguf));
  ModelConfig& c = m.config;

  // The vocabulary size is whatever token_embd holds: [vocab, dim].
  const GgufTensorInfo* embd = gguf.find_tensor("token_embd.weight");
  const std::string embd_shape = "[vocab, " + std::to_string(c.dim) + "]";
  if (embd == nullptr) return missing_tensor(gguf, "token_embd.weight", embd_shape);
  if (embd->n_dims != 2 || embd->ne[0] != c.dim ||
      embd->ne[1] > std::numeric_limits<int32_t>::max())
    return data_loss(m.path + ": tensor 'token_embd.weight' has shape " + embd->shape_string() +
                     ", expected " + embd_shape);
  c.vocab_size = static_cast<int>(embd->ne[1]);
  const int64_t dim = c.dim;
  const int64_t q_dim = static_cast<int64_t>(c.n_heads) * c.head_dim;
  const int64_t kv_dim = static_cast<int64_t>(c.n_kv_heads) * c.head_dim;
  const int64_t hidden = c.hidden_dim;
  const int64_t vocab = c.vocab_size;

  ModelWeights& w = m.weights;
  ASSIGN_OR_RETURN(w.token_embedding,
                   expect_tensor(gguf, "token_embd.weight", {vocab, dim}, "[vocab, dim]"));
  w.layers.resize(static_cast<std::size_t>(c.n_layers));
  for (int l = 0; l < c.n_layers; ++l) {
    LayerWeights& L = w.layers[static_cast<std::size_t>(l)];
    const std::string blk = "blk." + std::to_string(l) + ".";
    ASSIGN_OR_RETURN(L.attn_norm, expect_tensor(gguf, blk + "attn_norm.weight", {dim}, "[dim]"));
    ASSIGN_OR_RETURN(L.wq, expect_tensor(gguf, blk + "attn_q.weight", {q_dim, dim},
                                         "[n_heads * head_dim, dim]"));
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
    ASSIGN_OR_RETURN(
        L.w3, expect_tensor(gguf, blk + "ffn_up.weight", {hidden, dim}, "[hidden_dim, dim]"));
  }
  ASSIGN_OR_RETURN(w.output_norm, expect_tensor(gguf, "output_norm.weight", {dim}, "[dim]"));
  if (gguf.find_tensor("output.weight") != nullptr) {
    ASSIGN_OR_RETURN(w.output, expect_tensor(gguf, "output.weight", {vocab, dim}, "[vocab, dim]"));
  } else {
    w.output = w.token_embedding;  // tied classifier
  }

  if (c.block_diffusion() && c.mask_token_id >= c.vocab_size)
    return data_loss(m.path + ": diffusion.mask_token_id " + std::to_string(c.mask_token_id) +
                     " is not a token of the model's " + std::to_string(c.vocab_size) +
                     "-token vocabulary");
  ASSIGN_OR_RETURN(m.vocab, load_gguf_vocabulary(gguf));
  if (m.vocab.size() != c.vocab_size)
    return data_loss(m.path + ": the vocabulary has " + std::to_string(m.vocab.size()) +
                     " tokens but token_embd.weight has " + std::to_string(c.vocab_size) + " rows");

  // Tensors of a type the runtime cannot load are none of the expected ones
  // (those were checked above); TensorInfo cannot describe them, so they are
  // left out here (`tessera inspect` reads GgufFile directly).
  for (const GgufTensorInfo& t : gguf.tensors()) {
    const auto dtype = ggml_type_to_dtype(t.type);
    if (!dtype) continue;
    m.tensors.push_back(TensorInfo{t.name, *dtype, t.shape(), t.file_offset});
  }
  return m;
}

}  // namespace tessera
