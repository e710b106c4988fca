#include "core/io/file_lookup.h"

#include <sys/stat.h>

#include <algorithm>

#include "core/io/file_type.h"
#include "core/util/path_list.h"

namespace tessera {

std::vector<std::filesystem::path> file_search_path(FileKind kind,
                                                    const std::filesystem::path& base) {
  std::vector<std::filesystem::path> dirs;
  dirs.push_back(base.empty() ? std::filesystem::path(".") : base);
  for (const auto& dir : path_list_from_env("TESSERA_MODEL_PATH")) dirs.emplace_back(dir);
  const std::filesystem::path root(TESSERA_SOURCE_DIR);
  const std::filesystem::path shared = root.parent_path() / "shared";
  dirs.push_back(root / "models");
  dirs.push_back(shared / "models");
  if (kind == FileKind::kText) {
    dirs.push_back(root / "data");
    dirs.push_back(shared / "data");
  }
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

// A directory as a message shows it: absolute, so "." says which one.
std::string shown(const std::filesystem::path& dir) {
  std::error_code ec;
  std::filesystem::path full = std::filesystem::absolute(dir, ec);
  if (ec) full = dir;
  std::string text = full.lexically_normal().string();
  while (text.size() > 1 && text.back() == '/') text.pop_back();
  return text;
}

std::string how_to_fix(FileKind kind) {
  std::string fix =
      "name it by an absolute path or relative to one of these, or add its directory to "
      "TESSERA_MODEL_PATH (':'-separated)";
  if (kind == FileKind::kModel) fix += "; README.md (Models) says where to get the models";
  return fix;
}

}  // namespace

Result<std::string> find_file(std::string_view name, FileKind kind,
                              const std::filesystem::path& base, std::string_view what) {
  const std::string quoted = std::string(what) + " '" + std::string(name) + "'";
  if (name.empty()) return invalid_argument(std::string(what) + " is empty: name a file");
  const std::filesystem::path path(name);
  std::error_code ec;
  if (path.is_absolute()) {
    if (std::filesystem::is_regular_file(path, ec)) return path.string();
    if (const std::string type = non_file_kind(path); !type.empty())
      return invalid_argument(quoted + " is " + type + ", not a regular file");
    return not_found(quoted + " does not exist (an absolute path is not looked up elsewhere)");
  }
  std::vector<std::string> looked;
  for (const auto& dir : file_search_path(kind, base)) {
    const auto candidate = (dir / path).lexically_normal();
    if (std::filesystem::is_regular_file(candidate, ec)) return candidate.string();
    std::string entry = shown(dir);
    if (const std::string type = non_file_kind(candidate); !type.empty())
      entry += " (" + type + " there, not a regular file)";
    if (std::find(looked.begin(), looked.end(), entry) == looked.end())
      looked.push_back(std::move(entry));
  }
  std::string list;
  for (const std::string& dir : looked) list += (list.empty() ? "" : ", ") + dir;
  return not_found(quoted + " not found; looked in: " + list + "\n" + how_to_fix(kind));
}

Result<std::string> locate_model_file(const std::string& name, const std::filesystem::path& base) {
  return find_file(name, FileKind::kModel, base, "model file");
}

Result<std::string> locate_data_file(const std::string& name, const std::filesystem::path& base) {
  return find_file(name, FileKind::kText, base, "text file");
}

}  // namespace tessera
