// load_model / load_vocabulary: pick the format by the file's magic (never
// its extension) and hand over to the GGUF, tokenizer.json or llama2.c loader.
#include <algorithm>

#include "core/gguf/gguf_file.h"
#include "core/io/mapped_file.h"
#include "core/model/gguf_model.h"
#include "core/model/llama2c_model.h"
#include "core/model/model.h"
#include "core/tokenizer/llama2c_tokenizer_file.h"
#include "core/tokenizer/tokenizer_json.h"

namespace tessera {

Result<LoadedModel> load_model(const std::string& path,
                               const std::optional<std::string>& tokenizer_path) {
  ASSIGN_OR_RETURN(std::shared_ptr<const MappedFile> file, MappedFile::open(path));
  if (has_gguf_magic(*file)) {
    ASSIGN_OR_RETURN(GgufFile gguf, GgufFile::parse(std::move(file)));
    return load_gguf_model(gguf);
  }
  return load_llama2c_model(std::move(file), tokenizer_path.value_or(""));
}

Result<Vocabulary> load_vocabulary(const std::string& path) {
  ASSIGN_OR_RETURN(std::shared_ptr<const MappedFile> file, MappedFile::open(path));
  if (has_gguf_magic(*file)) {
    ASSIGN_OR_RETURN(GgufFile gguf, GgufFile::parse(std::move(file)));
    return load_gguf_vocabulary(gguf);
  }
  const std::string_view head(reinterpret_cast<const char*>(file->data()),
                              std::min<std::size_t>(file->size(), 64));
  if (looks_like_json(head)) return load_tokenizer_json(path);
  // The bytes are mapped already (the magic was read): parse them, do not map again.
  ASSIGN_OR_RETURN(Vocabulary vocab, parse_llama2c_tokenizer(*file));
  apply_llama2c_vocabulary_conventions(vocab);
  return vocab;
}

Result<Vocabulary> load_vocabulary_for_rows(const std::string& path, int rows) {
  ASSIGN_OR_RETURN(Vocabulary vocab, load_vocabulary(path));
  if (vocab.size() > rows)
    return invalid_argument("the tokenizer " + path + " has " + std::to_string(vocab.size()) +
                            " tokens but the model's output has " + std::to_string(rows) +
                            " rows; use the tokenizer that belongs to this model");
  const auto n = static_cast<std::size_t>(rows);
  for (std::size_t id = vocab.pieces.size(); id < n; ++id)
    vocab.pieces.push_back("[PAD" + std::to_string(id) + "]");
  if (!vocab.scores.empty()) vocab.scores.resize(n, 0.0f);
  if (!vocab.types.empty()) vocab.types.resize(n, TokenType::kUnused);
  return vocab;
}

}  // namespace tessera
