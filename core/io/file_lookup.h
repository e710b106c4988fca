// The one rule for finding a file that a command or a config names to be read:
// models, tokenizers, projection files, draft and restorer models, texts.
//
//   - an absolute path is used as it is;
//   - a relative one is looked for first in its base directory: the directory
//     of the config (or sweep) file that names it, or the current directory
//     for a command-line argument (a --set included: Config::base_directory);
//   - then in the search path of its kind: each directory of
//     TESSERA_MODEL_PATH (':'-separated), models/ and ../shared/models/ next
//     to the repository root (where this build's sources are); a text also in
//     data/ and ../shared/data/ there.
//
// A name that is not found is an error that lists every directory looked in.
// Files a command writes (--out, quantize's OUT) are never looked up: they go
// where the user says.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "core/status/status.h"

namespace tessera {

enum class FileKind {
  kModel,  // a model, tokenizer or projection file
  kText,   // a text to read (to score, fit on, tokenize): the model path, then data/
};

// The directories a relative name of `kind` is looked for in, in order:
// `base` first ("." when empty).
std::vector<std::filesystem::path> file_search_path(FileKind kind,
                                                    const std::filesystem::path& base);

// The file `name` names, found by the rule above. `what` names it in messages
// ("model file", "text file", "projection file"). NotFound lists every
// directory looked in ("looked in: a, b, c") and how to make it findable;
// InvalidArgument when an absolute path is not a regular file (a relative
// candidate that is not one is passed over and marked in the list).
Result<std::string> find_file(std::string_view name, FileKind kind,
                              const std::filesystem::path& base, std::string_view what);

// find_file for a model file (kModel, "model file") and for a text (kText,
// "text file"): the common cases.
Result<std::string> locate_model_file(const std::string& name, const std::filesystem::path& base);
Result<std::string> locate_data_file(const std::string& name, const std::filesystem::path& base);

}  // namespace tessera
