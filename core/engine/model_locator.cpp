#include "core/engine/model_locator.h"

#include <cstdlib>
#include <string_view>

namespace tessera {

std::vector<std::filesystem::path> model_search_path(const std::filesystem::path& config_dir) {
  std::vector<std::filesystem::path> dirs;
  dirs.push_back(config_dir.empty() ? std::filesystem::path(".") : config_dir);
  if (const char* env = std::getenv("TESSERA_MODEL_PATH")) {
    std::string_view rest(env);
    while (!rest.empty()) {
      const auto colon = rest.find(':');
      if (colon != 0) dirs.emplace_back(std::string(rest.substr(0, colon)));
      if (colon == std::string_view::npos) break;
      rest.remove_prefix(colon + 1);
    }
  }
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
