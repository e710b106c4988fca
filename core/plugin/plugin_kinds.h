// The plugin kinds, in display order, with the interface each one implements
// and the config section that holds its options. This table is the one list:
// the registry, the config schema and CMake's tessera_add_plugin() (which
// reads the quoted kind names below with a regular expression) all use it.
#pragma once

#include <span>
#include <string_view>

namespace tessera {

struct PluginKind {
  std::string_view name;       // "compressor": libtessera_compressor_<name>.so
  std::string_view section;    // "cache.codec": where its options live in a config
  std::string_view interface;  // "Compressor": the class its create() makes
};

// clang-format off
inline constexpr PluginKind kPluginKinds[] = {
    {"backend",    "backend",     "Backend"},
    {"compressor", "cache.codec", "Compressor"},
    {"cache",      "cache",       "CacheStore"},
    {"proposer",   "decode",      "Proposer"},
    {"verifier",   "decode",      "Verifier"},
    {"scheduler",  "scheduler",   "Scheduler"},
};
// clang-format on

// nullptr for an unknown kind.
constexpr const PluginKind* find_plugin_kind(std::string_view name) {
  for (const PluginKind& kind : kPluginKinds)
    if (kind.name == name) return &kind;
  return nullptr;
}

}  // namespace tessera
