// The checks a plugin passes before the core uses it (docs/plugins.md):
// first on the file, before it is loaded (ELF shape and the ABI stamp), then
// on the descriptor it exports. Each refusal names the file, what differs and
// the fix.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/plugin/abi.h"
#include "core/status/status.h"

namespace tessera {

// The identity a plugin was built with against this core's: same ABI major, a
// minor no newer, the same standard library, the same SDK headers.
Status check_abi_identity(uint32_t abi_major, uint32_t abi_minor, std::string_view fingerprint,
                          std::string_view sdk_hash, std::string_view origin);

// Before dlopen: the file is a whole ELF shared object for this machine and
// carries an ABI stamp (section .tessera_abi) that passes check_abi_identity.
// Nothing of the plugin runs.
Status check_plugin_file(const std::string& path);

// After loading (and for plugins linked into the binary): the descriptor's
// identity as above, its size, a known kind, a name and a create function.
Status check_plugin_descriptor(const TesseraPluginDescriptor& descriptor, std::string_view origin);

}  // namespace tessera
