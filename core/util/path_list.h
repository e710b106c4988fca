// Colon-separated directory lists from the environment (PATH-style variables
// such as TESSERA_PLUGIN_PATH and TESSERA_MODEL_PATH).
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
