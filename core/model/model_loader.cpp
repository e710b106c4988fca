// load_model / load_vocabulary: pick the format by the file's magic (never
// its extension) and hand over to the GGUF or llama2.c loader.
#include "core/gguf/gguf_file.h"
#include "core/io/mapped_file.h"
#include "core/model/gguf_model.h"
#include "core/model/llama2c_model.h"
#include "core/model/model.h"
#include "core/tokenizer/llama2c_tokenizer_file.h"

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
  // The bytes are mapped already (the magic was read): parse them, do not map again.
  ASSIGN_OR_RETURN(Vocabulary vocab, parse_llama2c_tokenizer(*file));
  apply_llama2c_vocabulary_conventions(vocab);
  return vocab;
}

}  // namespace tessera
