#include "core/gguf/vocabulary_writer.h"

#include <vector>

#include "core/tokenizer/tokenizer_pipeline.h"

namespace tessera {

Status write_vocabulary_keys(const Vocabulary& vocab, GgufWriter& writer) {
  const bool bpe = vocab.kind == VocabularyKind::kBytePairs;
  if (bpe && vocab.pre.empty())
    return unimplemented(
        "this vocabulary's pre-tokenizer has no llama.cpp name (tokenizer.ggml.pre); "
        "recognised from a tokenizer.json Split regex: llama-bpe (Llama 3), qwen2 (Qwen 2/3), "
        "gpt-2. Byte-fallback tokenizers such as Gemma 3's are converted by llama.cpp from "
        "their SentencePiece model instead");
  writer.set_string("tokenizer.ggml.model", bpe ? "gpt2" : "llama");
  if (bpe) writer.set_string("tokenizer.ggml.pre", vocab.pre);
  writer.set_string_array("tokenizer.ggml.tokens", vocab.pieces);
  std::vector<int32_t> types;
  types.reserve(vocab.pieces.size());
  for (std::size_t i = 0; i < vocab.pieces.size(); ++i)
    types.push_back(
        static_cast<int32_t>(i < vocab.types.size() ? vocab.types[i] : TokenType::kNormal));
  writer.set_array<int32_t>("tokenizer.ggml.token_type", types);
  if (bpe) {
    writer.set_string_array("tokenizer.ggml.merges", vocab.merges);
  } else {
    std::vector<float> scores = vocab.scores;
    scores.resize(vocab.pieces.size(), 0.0f);
    writer.set_array<float>("tokenizer.ggml.scores", scores);
    writer.set_bool("tokenizer.ggml.add_space_prefix", vocab.add_space_prefix);
  }
  const auto set_id = [&](const char* key, int32_t id) {
    if (id >= 0 && id < vocab.size()) writer.set_u32(key, static_cast<uint32_t>(id));
  };
  set_id("tokenizer.ggml.bos_token_id", vocab.bos_id);
  set_id("tokenizer.ggml.eos_token_id", vocab.eos_id);
  set_id("tokenizer.ggml.unknown_token_id", vocab.unk_id);
  set_id("tokenizer.ggml.eot_token_id", vocab.eot_id);
  writer.set_bool("tokenizer.ggml.add_bos_token", vocab.add_bos);
  writer.set_bool("tokenizer.ggml.add_eos_token", vocab.add_eos);
  if (!vocab.chat_template.empty())
    writer.set_string("tokenizer.chat_template", vocab.chat_template);
  return ok_status();
}

Status write_vocabulary_gguf(const Vocabulary& vocab, const std::string& path) {
  GgufWriter writer;
  RETURN_IF_ERROR(write_vocabulary_keys(vocab, writer));
  return writer.write_file(path);
}

}  // namespace tessera
