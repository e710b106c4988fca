// Finds a model file named in a config. An absolute path is used as it is; a
// relative one is looked up in the config's directory, then in each directory
// of TESSERA_MODEL_PATH (':'-separated), then in models/ and ../shared/models/
// next to the repository root (where this build's sources are).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "core/status/status.h"

namespace tessera {

// The directories searched for `name`, in order.
std::vector<std::filesystem::path> model_search_path(const std::filesystem::path& config_dir);

// The first existing file; NotFound lists every place tried and where to get
// the shipped models.
Result<std::string> locate_model_file(const std::string& name,
                                      const std::filesystem::path& config_dir);

// A data file (a text to score): looked up like a model, then in data/ and
// ../shared/data/ next to the repository root.
Result<std::string> locate_data_file(const std::string& name,
                                     const std::filesystem::path& config_dir);

}  // namespace tessera
