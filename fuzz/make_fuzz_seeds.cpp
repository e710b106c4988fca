// Writes the generated part of the fuzz seed corpus: tiny but complete model
// and tokenizer files that reach deep into the loaders and the forward with
// few bytes, which mutate far better than the megabyte models in ../shared.
//   tessera_fuzz_seeds <corpus-dir>   (writes <corpus-dir>/<target>/seed-*)
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "core/gguf/gguf_writer.h"
#include "tests/gguf/gguf_test_util.h"

namespace {

using namespace tessera;

void write(const std::filesystem::path& dir, const std::string& name,
           const std::vector<uint8_t>& bytes) {
  std::filesystem::create_directories(dir);
  std::ofstream out(dir / name, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
}

template <typename T>
void append(std::vector<uint8_t>& bytes, T value) {
  const auto* p = reinterpret_cast<const uint8_t*>(&value);
  bytes.insert(bytes.end(), p, p + sizeof(T));
}

// A legacy llama2.c checkpoint of tiny shape whose vocabulary is tok512's 512
// tokens (the fuzz target pairs it with tok512.bin).
std::vector<uint8_t> tiny_llama2c(int32_t seq_len) {
  const int32_t dim = 8, hidden = 12, layers = 1, heads = 2, kv_heads = 1, vocab = 512;
  std::vector<uint8_t> bytes;
  for (int32_t v : {dim, hidden, layers, heads, kv_heads, vocab, seq_len}) append(bytes, v);
  const int32_t head = dim / heads, kv_dim = head * kv_heads;
  const std::size_t floats = static_cast<std::size_t>(vocab) * dim + layers * dim +
                             layers * dim * dim * 2 + layers * kv_dim * dim * 2 + layers * dim +
                             layers * hidden * dim * 3 + dim +
                             static_cast<std::size_t>(seq_len) * head;
  for (std::size_t i = 0; i < floats; ++i)
    append(bytes, static_cast<float>(i % 13) * 0.0625f - 0.3f);
  return bytes;
}

std::vector<uint8_t> bytes_of(const std::string& text) {
  return std::vector<uint8_t>(text.begin(), text.end());
}

std::string repeated(const std::string& piece, int times) {
  std::string out;
  for (int i = 0; i < times; ++i) out += piece;
  return out;
}

// Templates past every nesting and work limit of the chat renderer, too long
// to commit and for libFuzzer to grow by itself (its inputs start at 4 KB):
// chains of 100,000 links, values nested a million deep at render time.
void write_chat_seeds(const std::filesystem::path& dir) {
  constexpr int kLinks = 100000;
  const std::pair<const char*, std::string> seeds[] = {
      {"plus-chain", "{{ 1" + repeated("+1", kLinks) + " }}"},
      {"pow-chain", "{{ 1" + repeated("**1", kLinks) + " }}"},
      {"subscript-chain", "{{ messages" + repeated("[0]", kLinks) + " }}"},
      {"attribute-chain", "{{ x" + repeated(".a", kLinks) + " }}"},
      {"filter-chain", "{{ 'a'" + repeated("|trim", kLinks) + " }}"},
      {"deep-list",
       "{% set x = [] %}{% for i in range(1000000) %}{% set x = [x] %}{% endfor %}"
       "{{ x|length }}"},
      {"deep-dict",
       "{% set x = {} %}{% for i in range(200000) %}{% set x = {'a': x} %}"
       "{% if loop.last %}{{ x|tojson }}{% endif %}{% endfor %}"},
      {"macro-depth", "{% macro f(n) %}" + repeated("{% if true %}", 80) + "{{ f(n) }}" +
                          repeated("{% endif %}", 80) + "{% endmacro %}{{ f(1) }}"},
  };
  for (const auto& [name, text] : seeds)
    write(dir, std::string("seed-") + name + ".jinja", bytes_of(text));
}

// A tokenizer.json whose added token is 100,000 bytes: the fuzz target then
// encodes the file's own text, which keeps nearly matching it.
void write_tokenizer_json_seeds(const std::filesystem::path& dir) {
  const std::string token = std::string(99999, 'a') + "b";
  const std::string json = R"({"added_tokens": [{"id": 3, "content": ")" + token +
                           R"(", "special": true}], "normalizer": null, "pre_tokenizer": null,
  "post_processor": null, "decoder": null,
  "model": {"type": "BPE", "vocab": {"a": 0, "b": 1, " ": 2, ")" +
                           token + R"(": 3}, "merges": []}})";
  write(dir, "seed-long-added-token.json", bytes_of(json));
}

std::vector<uint8_t> tiny_tokenizer() {
  std::vector<uint8_t> bytes;
  append(bytes, int32_t{8});
  for (const std::string piece : {"<unk>", "\n<s>\n", "\n</s>\n", "<0x41>", " a", "ab", "b"}) {
    append(bytes, -1.5f);
    append(bytes, static_cast<int32_t>(piece.size()));
    bytes.insert(bytes.end(), piece.begin(), piece.end());
  }
  return bytes;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: tessera_fuzz_seeds <corpus-dir>\n");
    return 2;
  }
  const std::filesystem::path root(argv[1]);
  write(root / "gguf", "seed-tiny-f32.gguf", testing::tiny_llama_writer().serialize());
  write(root / "gguf", "seed-tiny-f16.gguf", testing::tiny_llama_writer(DType::kF16).serialize());
  // Block-quantized weights (rows of 32 and 64: whole q8_0 / q4_0 blocks).
  const testing::TinyDims wide{.dim = 32, .hidden = 64, .layers = 1};
  for (const DType dtype : {DType::kQ8_0, DType::kQ4_0})
    write(root / "gguf", "seed-tiny-" + std::string(dtype_name(dtype)) + ".gguf",
          testing::tiny_llama_writer(dtype, true, false, wide).serialize());
  write(
      root / "gguf", "seed-tiny-minimal.gguf",
      testing::tiny_llama_writer(DType::kF32, /*with_output=*/false, /*minimal=*/true).serialize());
  GgufWriter vocab_only;
  vocab_only.set_string("general.architecture", "llama");
  vocab_only.set_string("tokenizer.ggml.model", "llama");
  vocab_only.set_string_array("tokenizer.ggml.tokens",
                              {"<unk>", "<s>", "</s>", "\xe2\x96\x81", "a"});
  vocab_only.set_u32("tokenizer.ggml.unknown_token_id", 0xffffffffu);
  write(root / "gguf", "seed-vocab-only.gguf", vocab_only.serialize());
  write(root / "llama2c_model", "seed-tiny.bin", tiny_llama2c(4));
  write(root / "llama2c_tokenizer", "seed-tiny-tokenizer.bin", tiny_tokenizer());
  write_chat_seeds(root / "chat");
  write_tokenizer_json_seeds(root / "tokenizer_json");
  return 0;
}
