// Reads TOML text into a ConfigDocument. The only place that sees toml++
// (linked privately into the core; its headers must not reach nvcc).
#pragma once

#include <string>
#include <string_view>

#include "core/config/config_entry.h"
#include "core/status/status.h"

namespace tessera {

// `source_name` prefixes every position ("configs/x.toml:3:7"). A syntax
// error is InvalidArgument with toml++'s line, column and description.
Result<ConfigDocument> read_toml(std::string_view text, const std::string& source_name);

}  // namespace tessera
