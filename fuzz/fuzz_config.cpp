// Configs: the TOML reader (with its nesting guard), --set overrides, the core
// schema checks, every plugin's option checks and the typed getters, as the
// CLI runs them. The input is TOML; lines after a line "--set" are overrides.
//
// Oracle: when the nesting guard lets a text through and toml++ parses it, the
// document really is no deeper than kMaxTomlNesting (the guard must never
// under-count, or toml++ could recurse past the stack).
#include <toml++/toml.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/config/config.h"
#include "core/config/config_schema.h"
#include "core/config/toml_nesting.h"
#include "fuzz/fuzz_support.h"

namespace {

using namespace tessera;

// The depth of the deepest node, walked with an explicit stack.
int document_depth(const toml::table& root) {
  int deepest = 0;
  std::vector<std::pair<const toml::node*, int>> pending;
  for (auto&& [key, node] : root) pending.emplace_back(&node, 1);
  while (!pending.empty()) {
    const auto [node, depth] = pending.back();
    pending.pop_back();
    deepest = std::max(deepest, depth);
    if (const auto* table = node->as_table()) {
      for (auto&& [key, child] : *table) pending.emplace_back(&child, depth + 1);
    } else if (const auto* array = node->as_array()) {
      for (const auto& child : *array) pending.emplace_back(&child, depth + 1);
    }
  }
  return deepest;
}

void check_guard(std::string_view text) {
  if (!check_toml_nesting(text, "fuzz.toml").ok()) return;
  try {
    const toml::table root = toml::parse(text);
    if (document_depth(root) > kMaxTomlNesting) __builtin_trap();
  } catch (const toml::parse_error&) {
  }
}

void exercise(const Config& config) {
  if (!config.validate_core().ok()) return;
  for (const ConfigKey& key : core_config_schema()) {
    const std::string name = key.key();
    if (key.list) {
      (void)config.get_list(name);
      continue;
    }
    switch (key.spec.type) {
      case OptionType::kBool:
        (void)config.get_bool(name);
        break;
      case OptionType::kInt:
        (void)config.get_int(name);
        break;
      case OptionType::kFloat:
        (void)config.get_float(name);
        break;
      case OptionType::kString:
        (void)config.get_string(name);
        break;
    }
  }
  // Each plugin kind's options, with the plugin the config names (or the
  // first one of that kind, so options are checked even for unknown names).
  const auto& registry = fuzz::builtin_registry();
  for (const std::string_view kind : plugin_kinds()) {
    const std::string_view section = config_section_for_kind(kind);
    for (const PluginRecord& record : registry.plugins()) {
      if (record.kind() != kind) continue;
      (void)config.plugin_options(section, record.options(), "fuzzed plugin");
      break;
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const std::size_t marker = input.find("\n--set\n");
  const std::string_view toml = input.substr(0, marker);
  check_guard(toml);

  auto config = Config::parse(toml, "fuzz.toml");
  if (!config.ok()) return 0;
  if (marker != std::string_view::npos) {
    std::string_view rest = input.substr(marker + 7);
    while (!rest.empty()) {
      const std::size_t end = rest.find('\n');
      (void)config->apply_override(rest.substr(0, end));
      if (end == std::string_view::npos) break;
      rest.remove_prefix(end + 1);
    }
  }
  exercise(*config);
  return 0;
}
