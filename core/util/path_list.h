// Colon-separated directory lists (PATH-style): TESSERA_PLUGIN_PATH,
// TESSERA_MODEL_PATH and list-valued config keys given as text.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tessera {

// "a::b:" -> {"a", "b"}: empty entries are dropped, order is kept.
std::vector<std::string> split_path_list(std::string_view list);

// split_path_list() of the variable's value; empty when it is unset.
std::vector<std::string> path_list_from_env(const char* variable);

}  // namespace tessera
