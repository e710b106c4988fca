#include "core/model/llama2c_model.h"

#include <cstring>
#include <filesystem>
#include <limits>

#include "core/tokenizer/llama2c_tokenizer_file.h"

namespace tessera {
namespace {

constexpr uint64_t kHeaderBytes = 7 * sizeof(int32_t);
// The newer llama2.c exports (version 1 and 2) start with this uint32 ("ak42").
constexpr uint32_t kLlama2cV1Magic = 0x616b3432;
// Bounds that no real checkpoint comes near; past them the header is garbage
// (and the size arithmetic below stays far from overflowing 64 bits).
constexpr int32_t kMaxWidth = 1 << 20;  // dim, hidden_dim
constexpr int32_t kMaxLayers = 1 << 12;
constexpr int32_t kMaxVocab = 1 << 24;
constexpr int32_t kMaxSeqLen = 1 << 24;

std::string header_text(const Llama2cHeader& h) {
  return "dim=" + std::to_string(h.dim) + ", hidden_dim=" + std::to_string(h.hidden_dim) +
         ", n_layers=" + std::to_string(h.n_layers) + ", n_heads=" + std::to_string(h.n_heads) +
         ", n_kv_heads=" + std::to_string(h.n_kv_heads) +
         ", vocab_size=" + std::to_string(h.shared_classifier ? h.vocab_size : -h.vocab_size) +
         ", seq_len=" + std::to_string(h.seq_len);
}

}  // namespace

Status check_llama2c_size(const MappedFile& file, const Llama2cHeader& h) {
  const uint64_t expected = h.expected_file_bytes();
  if (expected == file.size()) return ok_status();
  return data_loss(file.path() + ": file size mismatch: expected " + std::to_string(expected) +
                   " bytes from the llama2.c header (" + header_text(h) + "), but the file has " +
                   std::to_string(file.size()) +
                   " bytes (truncated, or not a legacy llama2.c checkpoint)");
}

uint64_t Llama2cHeader::expected_file_bytes() const {
  const uint64_t dim_ = static_cast<uint64_t>(dim);
  const uint64_t hidden = static_cast<uint64_t>(hidden_dim);
  const uint64_t layers = static_cast<uint64_t>(n_layers);
  const uint64_t vocab = static_cast<uint64_t>(vocab_size);
  const uint64_t head = dim_ / static_cast<uint64_t>(n_heads);
  const uint64_t kv_dim = head * static_cast<uint64_t>(n_kv_heads);
  uint64_t floats = vocab * dim_;                   // token_embedding
  floats += layers * dim_;                          // rms_att
  floats += layers * dim_ * dim_ * 2;               // wq, wo
  floats += layers * kv_dim * dim_ * 2;             // wk, wv
  floats += layers * dim_;                          // rms_ffn
  floats += layers * hidden * dim_ * 3;             // w1, w2, w3
  floats += dim_;                                   // rms_final
  floats += static_cast<uint64_t>(seq_len) * head;  // freq_cis_real + freq_cis_imag
  if (!shared_classifier) floats += vocab * dim_;   // wcls
  return kHeaderBytes + floats * sizeof(float);
}

Result<Llama2cHeader> parse_llama2c_header(const MappedFile& file) {
  const std::string& path = file.path();
  if (file.size() >= 4) {
    uint32_t magic = 0;
    std::memcpy(&magic, file.data(), 4);
    if (magic == kLlama2cV1Magic)
      return unimplemented(path +
                           ": this is a newer llama2.c export (magic \"ak42\", version 1 "
                           "or 2); only the legacy fp32 export is supported (export.py "
                           "--version 0) or convert it to GGUF");
  }
  const std::string not_valid = path + ": no GGUF magic, and not a valid llama2.c checkpoint: ";
  if (file.size() < kHeaderBytes)
    return data_loss(not_valid + "the file has " + std::to_string(file.size()) +
                     " bytes, less than the 28-byte header");
  int32_t f[7];
  std::memcpy(f, file.data(), sizeof f);
  Llama2cHeader h;
  h.dim = f[0];
  h.hidden_dim = f[1];
  h.n_layers = f[2];
  h.n_heads = f[3];
  h.n_kv_heads = f[4];
  h.shared_classifier = f[5] >= 0;
  h.vocab_size = f[5] == std::numeric_limits<int32_t>::min() ? 0 : (f[5] < 0 ? -f[5] : f[5]);
  h.seq_len = f[6];

  struct Field {
    const char* name;
    int32_t value;
    int32_t max;
  };
  const Field fields[] = {{"dim", h.dim, kMaxWidth},
                          {"hidden_dim", h.hidden_dim, kMaxWidth},
                          {"n_layers", h.n_layers, kMaxLayers},
                          {"n_heads", h.n_heads, kMaxWidth},
                          {"n_kv_heads", h.n_kv_heads, kMaxWidth},
                          {"vocab_size", h.vocab_size, kMaxVocab},
                          {"seq_len", h.seq_len, kMaxSeqLen}};
  for (const Field& field : fields) {
    if (field.value <= 0 || field.value > field.max)
      return data_loss(not_valid + "header field " + field.name + " = " +
                       std::to_string(field.value) + " (must be 1 to " + std::to_string(field.max) +
                       "); header: " + header_text(h));
  }
  if (h.dim % h.n_heads != 0)
    return data_loss(not_valid + "dim " + std::to_string(h.dim) + " is not divisible by n_heads " +
                     std::to_string(h.n_heads));
  if (h.n_heads % h.n_kv_heads != 0)
    return data_loss(not_valid + "n_heads " + std::to_string(h.n_heads) +
                     " is not divisible by n_kv_heads " + std::to_string(h.n_kv_heads));
  if ((h.dim / h.n_heads) % 2 != 0)
    return data_loss(not_valid + "head size " + std::to_string(h.dim / h.n_heads) +
                     " is odd (RoPE rotates pairs)");
  return h;
}

void apply_llama2c_vocabulary_conventions(Vocabulary& vocab) {
  vocab.bos_id = 1;
  vocab.eos_id = 2;
  vocab.unk_id = 0;
  vocab.add_space_prefix = true;  // llama2.c's encoder prepends a space
  const std::size_t n = vocab.pieces.size();
  // read_llama2c_tokenizer already derives the types from the pieces; the
  // positional rule is the fallback for a vocabulary that came without them.
  if (vocab.types.size() != n) {
    vocab.types.assign(n, TokenType::kNormal);
    for (std::size_t t = 0; t < n; ++t) {
      if (t == 0)
        vocab.types[t] = TokenType::kUnknown;
      else if (t <= 2)
        vocab.types[t] = TokenType::kControl;
      else if (t <= 258)
        vocab.types[t] = TokenType::kByte;  // <0x00>..<0xFF>
    }
  }
  if (vocab.scores.size() != n) vocab.scores.resize(n, 0.0f);
}

Result<LoadedModel> load_llama2c_model(std::shared_ptr<const MappedFile> file,
                                       const std::string& tokenizer_path) {
  ASSIGN_OR_RETURN(Llama2cHeader h, parse_llama2c_header(*file));
  RETURN_IF_ERROR(check_llama2c_size(*file, h));
  if (tokenizer_path.empty())
    return invalid_argument(file->path() +
                            " is a llama2.c checkpoint, which needs its tokenizer file: "
                            "set model.tokenizer (for example tok512.bin)");
  auto tokenizer = MappedFile::open(tokenizer_path);
  if (!tokenizer.ok())
    return tokenizer.status().with_context("reading llama2.c tokenizer '" + tokenizer_path +
                                           "' (check model.tokenizer)");
  return load_llama2c_model(std::move(file), std::move(tokenizer).value());
}

Result<LoadedModel> load_llama2c_model(std::shared_ptr<const MappedFile> file,
                                       std::shared_ptr<const MappedFile> tokenizer) {
  ASSIGN_OR_RETURN(Llama2cHeader h, parse_llama2c_header(*file));
  RETURN_IF_ERROR(check_llama2c_size(*file, h));
  const std::string& tokenizer_path = tokenizer->path();
  const std::string& path = file->path();

  LoadedModel m;
  m.path = path;
  m.format = "llama2c";
  ModelConfig& c = m.config;
  c.architecture = "llama";
  c.name = std::filesystem::path(path).stem().string();
  c.dim = h.dim;
  c.hidden_dim = h.hidden_dim;
  c.n_layers = h.n_layers;
  c.n_heads = h.n_heads;
  c.n_kv_heads = h.n_kv_heads;
  c.head_dim = h.dim / h.n_heads;
  c.vocab_size = h.vocab_size;
  c.context_length = h.seq_len;
  c.rms_eps = 1e-5f;
  c.rope_theta = 10000.0f;

  ASSIGN_OR_RETURN(m.vocab, parse_llama2c_tokenizer(*tokenizer));
  m.tokenizer_file = std::move(tokenizer);
  apply_llama2c_vocabulary_conventions(m.vocab);
  if (m.vocab.size() != c.vocab_size)
    return invalid_argument(tokenizer_path + " has " + std::to_string(m.vocab.size()) +
                            " tokens but the model " + path + " has vocab_size " +
                            std::to_string(c.vocab_size) + "; is it the model's tokenizer?");

  // Walk the weights in file order; the size check above guarantees they fit.
  // The mapping is read-only: the Tensor views must not be written through.
  auto* cursor = const_cast<float*>(reinterpret_cast<const float*>(file->data() + kHeaderBytes));
  const int64_t dim = c.dim;
  const int64_t kv_dim = static_cast<int64_t>(c.n_kv_heads) * c.head_dim;
  const int64_t hidden = c.hidden_dim;
  const int64_t vocab = c.vocab_size;
  auto take = [&](const std::string& name, std::initializer_list<int64_t> shape) {
    Tensor t = Tensor::contiguous(cursor, DType::kF32, shape);
    const auto offset =
        static_cast<uint64_t>(reinterpret_cast<const uint8_t*>(cursor) - file->data());
    m.tensors.push_back(TensorInfo{name, DType::kF32, std::vector<int64_t>(shape), offset});
    cursor += t.elements();
    return t;
  };
  auto layer_name = [](int l, const char* what) {
    return "blk." + std::to_string(l) + "." + what + ".weight";
  };

  ModelWeights& w = m.weights;
  w.layers.resize(static_cast<std::size_t>(c.n_layers));
  auto each_layer = [&](auto&& f) {
    for (int l = 0; l < c.n_layers; ++l) f(l, w.layers[static_cast<std::size_t>(l)]);
  };
  w.token_embedding = take("token_embd.weight", {vocab, dim});
  each_layer(
      [&](int l, LayerWeights& L) { L.attn_norm = take(layer_name(l, "attn_norm"), {dim}); });
  each_layer([&](int l, LayerWeights& L) { L.wq = take(layer_name(l, "attn_q"), {dim, dim}); });
  each_layer([&](int l, LayerWeights& L) { L.wk = take(layer_name(l, "attn_k"), {kv_dim, dim}); });
  each_layer([&](int l, LayerWeights& L) { L.wv = take(layer_name(l, "attn_v"), {kv_dim, dim}); });
  each_layer([&](int l, LayerWeights& L) {
    L.wo = take(layer_name(l, "attn_output"), {dim, dim});
  });
  each_layer([&](int l, LayerWeights& L) { L.ffn_norm = take(layer_name(l, "ffn_norm"), {dim}); });
  each_layer([&](int l, LayerWeights& L) {
    L.w1 = take(layer_name(l, "ffn_gate"), {hidden, dim});
  });
  each_layer([&](int l, LayerWeights& L) {
    L.w2 = take(layer_name(l, "ffn_down"), {dim, hidden});
  });
  each_layer([&](int l, LayerWeights& L) { L.w3 = take(layer_name(l, "ffn_up"), {hidden, dim}); });
  w.output_norm = take("output_norm.weight", {dim});
  // The RoPE tables of the legacy export: unused (RoPE is computed), kept in
  // the tensor list so `inspect` accounts for every byte.
  take("freq_cis_real", {c.context_length, c.head_dim / 2});
  take("freq_cis_imag", {c.context_length, c.head_dim / 2});
  w.output = h.shared_classifier ? w.token_embedding : take("output.weight", {vocab, dim});

  const std::vector<std::pair<std::string, int64_t>> fields = {{"llama2c.dim", h.dim},
                                                               {"llama2c.hidden_dim", h.hidden_dim},
                                                               {"llama2c.n_layers", h.n_layers},
                                                               {"llama2c.n_heads", h.n_heads},
                                                               {"llama2c.n_kv_heads", h.n_kv_heads},
                                                               {"llama2c.vocab_size", h.vocab_size},
                                                               {"llama2c.seq_len", h.seq_len}};
  for (const auto& [key, value] : fields) m.metadata.emplace_back(key, std::to_string(value));
  m.metadata.emplace_back("llama2c.shared_classifier", h.shared_classifier ? "true" : "false");
  m.metadata.emplace_back("tokenizer.path", tokenizer_path);
  m.metadata.emplace_back("tokenizer.tokens", std::to_string(m.vocab.size()));
  m.file = std::move(file);
  return m;
}

}  // namespace tessera
