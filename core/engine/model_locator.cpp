#include "core/engine/model_locator.h"

#include "core/util/path_list.h"

namespace tessera {

std::vector<std::filesystem::path> model_search_path(const std::filesystem::path& config_dir) {
  std::vector<std::filesystem::path> dirs;
  dirs.push_back(config_dir.empty() ? std::filesystem::path(".") : config_dir);
  for (const auto& dir : path_list_from_env("TESSERA_MODEL_PATH")) dirs.emplace_back(dir);
  const std::filesystem::path root(TESSERA_SOURCE_DIR);
  dirs.push_back(root / "models");
  dirs.push_back(root.parent_path() / "shared" / "models");
  return dirs;
}

Result<std::string> locate_model_file(const std::string& name,
                                      const std::filesystem::path& config_dir) {
  const std::filesystem::path path(name);
  std::error_code ec;
  if (path.is_absolute()) {
    if (std::filesystem::is_regular_file(path, ec)) return path.string();
    return not_found("model file " + name + " does not exist");
  }
  std::string tried;
  for (const auto& dir : model_search_path(config_dir)) {
    const auto candidate = (dir / path).lexically_normal();
    if (std::filesystem::is_regular_file(candidate, ec)) return candidate.string();
    tried += "\n  " + candidate.string();
  }
  return not_found("model file '" + name + "' not found; tried:" + tried +
                   "\nset model.path to an existing file (absolute, or relative to the config), "
                   "add its directory to TESSERA_MODEL_PATH, or see README.md for where to get "
                   "the models");
}

}  // namespace tessera
