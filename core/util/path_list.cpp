#include "core/util/path_list.h"

#include <cstdlib>
#include <utility>

#include "core/util/strings.h"

namespace tessera {

std::vector<std::string> split_path_list(std::string_view list) {
  std::vector<std::string> entries;
  for (std::string& entry : split(list, ':'))
    if (!entry.empty()) entries.push_back(std::move(entry));
  return entries;
}

std::vector<std::string> path_list_from_env(const char* variable) {
  const char* value = std::getenv(variable);
  return value ? split_path_list(value) : std::vector<std::string>{};
}

}  // namespace tessera
