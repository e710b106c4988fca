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
  std::string_view name_key;   // "cache.codec.plugin": the config key that picks one
};

// clang-format off
inline constexpr PluginKind kPluginKinds[] = {
    {"backend",    "backend",     "Backend",    "backend.plugin"},
    {"compressor", "cache.codec", "Compressor", "cache.codec.plugin"},
    {"cache",      "cache",       "CacheStore", "cache.plugin"},
    {"proposer",   "decode",      "Proposer",   "decode.proposer"},
    {"verifier",   "decode",      "Verifier",   "decode.verifier"},
    {"scheduler",  "scheduler",   "Scheduler",  "scheduler.plugin"},
};
// clang-format on

// nullptr for an unknown kind.
constexpr const PluginKind* find_plugin_kind(std::string_view name) {
  for (const PluginKind& kind : kPluginKinds)
    if (kind.name == name) return &kind;
  return nullptr;
}

}  // namespace tessera
