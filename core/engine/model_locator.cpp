#include "core/engine/model_locator.h"

#include <sys/stat.h>

#include "core/io/file_type.h"
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

namespace {

// What is at `path` when it exists but is not a regular file ("a directory",
// "a character device", ...); "" when it is a regular file or absent.
std::string non_file_kind(const std::filesystem::path& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || S_ISREG(st.st_mode)) return "";
  return file_type_name(st.st_mode);
}

}  // namespace

namespace {

Result<std::string> locate_in(const std::string& name,
                              const std::vector<std::filesystem::path>& dirs,
                              const std::string& what, const std::string& fix) {
  const std::filesystem::path path(name);
  std::error_code ec;
  if (path.is_absolute()) {
    if (std::filesystem::is_regular_file(path, ec)) return path.string();
    if (const std::string kind = non_file_kind(path); !kind.empty())
      return invalid_argument(what + " " + name + " is " + kind + ", not a regular file; " + fix);
    return not_found(what + " " + name + " does not exist");
  }
  std::string tried;
  for (const auto& dir : dirs) {
    const auto candidate = (dir / path).lexically_normal();
    if (std::filesystem::is_regular_file(candidate, ec)) return candidate.string();
    tried += "\n  " + candidate.string();
    if (const std::string kind = non_file_kind(candidate); !kind.empty())
      tried += " (" + kind + ", not a regular file)";
  }
  return not_found(what + " '" + name + "' not found; tried:" + tried + "\n" + fix);
}

}  // namespace

Result<std::string> locate_model_file(const std::string& name,
                                      const std::filesystem::path& config_dir) {
  return locate_in(name, model_search_path(config_dir), "model file",
                   "set model.path to an existing file (absolute, or relative to the config), "
                   "add its directory to TESSERA_MODEL_PATH, or see README.md for where to get "
                   "the models");
}

Result<std::string> locate_data_file(const std::string& name,
                                     const std::filesystem::path& config_dir) {
  std::vector<std::filesystem::path> dirs = model_search_path(config_dir);
  const std::filesystem::path root(TESSERA_SOURCE_DIR);
  dirs.push_back(root / "data");
  dirs.push_back(root.parent_path() / "shared" / "data");
  return locate_in(name, dirs, "data file",
                   "give an existing file (absolute, or relative to the sweep file), or add its "
                   "directory to TESSERA_MODEL_PATH");
}

}  // namespace tessera
