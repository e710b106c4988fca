// Plugins linked into the binary by the embedded build. The table is generated
// by CMake (tessera_finish_static_plugins) and is empty in the default build.
#pragma once

#include <span>

#include "core/plugin/abi.h"

namespace tessera {

std::span<const TesseraPluginDescriptor* const> builtin_plugins();

}  // namespace tessera
