// Helpers shared by the loader tests: model paths, temporary files, and a
// small valid llama GGUF built with GgufWriter.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "core/gguf/gguf_writer.h"
#include "core/tensor/block_quant.h"

namespace tessera::testing {

inline std::string model_path(const std::string& name) {
  return std::string(TESSERA_SHARED_DIR) + "/models/" + name;
}

inline std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

// A fresh directory under the system temp dir, removed on destruction.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "tessera_gguf_XXXXXX").string();
    path_ = ::mkdtemp(tmpl.data()) ? tmpl : std::string();
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  std::string file(const std::string& name) const { return path_ + "/" + name; }
  std::string write(const std::string& name, const std::vector<uint8_t>& bytes) const {
    const std::string p = file(name);
    std::ofstream out(p, std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()),
              static_cast<std::streamsize>(bytes.size()));
    return p;
  }

 private:
  std::string path_;
};

template <typename T>
void put(std::vector<uint8_t>& bytes, uint64_t offset, T value) {
  std::memcpy(bytes.data() + offset, &value, sizeof(T));
}

// Deterministic, distinct values for tensor k.
inline std::vector<float> pattern(std::size_t n, int k) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i)
    v[i] = static_cast<float>(k) + static_cast<float>(i % 97) * 0.03125f - 1.5f;
  return v;
}

// The sizes of the tiny model below.
struct TinyDims {
  int64_t dim = 8, hidden = 12, layers = 2, heads = 2, kv_heads = 1, vocab = 10;
  int64_t head_dim() const { return dim / heads; }
};

// A complete, valid llama model of `d`'s sizes with a 10-token vocabulary.
// Tensors are f32 unless `dtype` says otherwise; in a block type (q8_0, ...,
// whose blocks `d.dim` and `d.hidden` must fit) the norms stay f32, as in real
// files. `minimal` leaves out every optional key (then kv heads = heads, as
// the default says).
inline GgufWriter tiny_llama_writer(DType dtype = DType::kF32, bool with_output = true,
                                    bool minimal = false, TinyDims d = {}) {
  if (minimal) d.kv_heads = d.heads;
  GgufWriter w;
  w.set_string("general.architecture", "llama");
  w.set_string("general.name", "tiny");
  w.set_u32("llama.context_length", 64);
  w.set_u32("llama.embedding_length", static_cast<uint32_t>(d.dim));
  w.set_u32("llama.feed_forward_length", static_cast<uint32_t>(d.hidden));
  w.set_u32("llama.block_count", static_cast<uint32_t>(d.layers));
  w.set_u32("llama.attention.head_count", static_cast<uint32_t>(d.heads));
  w.set_string("tokenizer.ggml.model", "llama");
  w.set_string_array("tokenizer.ggml.tokens", {"<unk>", "<s>", "</s>",
                                               "\xe2\x96\x81"
                                               "a",
                                               "b", "c", "d", "e", "f", "g"});
  if (!minimal) {
    const std::vector<float> scores = {0, 0, 0, -1, -2, -3, -4, -5, -6, -7};
    w.set_array<float>("tokenizer.ggml.scores", scores);
    const std::vector<int32_t> types = {2, 3, 3, 1, 1, 1, 1, 1, 1, 1};
    w.set_array<int32_t>("tokenizer.ggml.token_type", types);
    w.set_u32("tokenizer.ggml.bos_token_id", 1);
    w.set_u32("tokenizer.ggml.eos_token_id", 2);
    w.set_u32("tokenizer.ggml.unknown_token_id", 0);
    w.set_bool("tokenizer.ggml.add_space_prefix", false);
    w.set_u32("llama.attention.head_count_kv", static_cast<uint32_t>(d.kv_heads));
    w.set_f32("llama.attention.layer_norm_rms_epsilon", 1e-6f);
    w.set_f32("llama.rope.freq_base", 500000.0f);
  }

  int k = 0;
  auto add = [&](const std::string& name, std::vector<int64_t> shape) {
    std::size_t n = 1;
    for (int64_t s : shape) n *= static_cast<std::size_t>(s);
    const std::vector<float> v = pattern(n, k++);
    Status st;
    if (dtype == DType::kF16) {
      std::vector<uint16_t> h(n);
      for (std::size_t i = 0; i < n; ++i) h[i] = float_to_half(v[i]);
      st = w.add_tensor(name, DType::kF16, shape, h.data());
    } else if (dtype != DType::kF32 && shape.size() == 2) {
      std::vector<uint8_t> bytes(dtype_row_bytes(dtype, static_cast<int64_t>(n)));
      quantize_row(dtype, v.data(), static_cast<int64_t>(n), bytes.data());
      st = w.add_tensor(name, dtype, shape, bytes.data());
    } else {
      st = w.add_tensor(name, DType::kF32, shape, v.data());
    }
    if (!st.ok()) std::abort();
  };
  const int64_t q = d.heads * d.head_dim(), kv = d.kv_heads * d.head_dim();
  add("token_embd.weight", {d.vocab, d.dim});
  add("output_norm.weight", {d.dim});
  if (with_output) add("output.weight", {d.vocab, d.dim});
  for (int64_t l = 0; l < d.layers; ++l) {
    const std::string b = "blk." + std::to_string(l) + ".";
    add(b + "attn_q.weight", {q, d.dim});
    add(b + "attn_k.weight", {kv, d.dim});
    add(b + "attn_v.weight", {kv, d.dim});
    add(b + "attn_output.weight", {d.dim, q});
    add(b + "attn_norm.weight", {d.dim});
    add(b + "ffn_gate.weight", {d.hidden, d.dim});
    add(b + "ffn_down.weight", {d.dim, d.hidden});
    add(b + "ffn_up.weight", {d.hidden, d.dim});
    add(b + "ffn_norm.weight", {d.dim});
  }
  return w;
}

}  // namespace tessera::testing
