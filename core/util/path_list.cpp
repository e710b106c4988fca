#include "core/util/path_list.h"

#include <cstdlib>

namespace tessera {

std::vector<std::string> split_path_list(std::string_view list) {
  std::vector<std::string> entries;
  while (!list.empty()) {
    const auto colon = list.find(':');
    if (colon != 0) entries.emplace_back(list.substr(0, colon));
    if (colon == std::string_view::npos) break;
    list.remove_prefix(colon + 1);
  }
  return entries;
}

std::vector<std::string> path_list_from_env(const char* variable) {
  const char* value = std::getenv(variable);
  return value ? split_path_list(value) : std::vector<std::string>{};
}

}  // namespace tessera
