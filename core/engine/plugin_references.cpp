#include "core/engine/plugin_references.h"

#include <algorithm>
#include <string>

namespace tessera {

Result<std::vector<const PluginRecord*>> plugins_named_in(const Config& config,
                                                          const PluginRegistry& registry,
                                                          std::string_view section,
                                                          std::vector<const PluginRecord*> roots) {
  std::vector<const PluginRecord*> found = std::move(roots);
  for (std::size_t i = 0; i < found.size(); ++i) {
    const PluginRecord& record = *found[i];
    const std::string description = record.kind() + " plugin '" + record.name() + "'";
    ASSIGN_OR_RETURN(OptionValues values,
                     config.declared_options(section, {description, record.options()}));
    for (const OptionSpec& option : record.options()) {
      if (option.type != OptionType::kString || option.choices == nullptr ||
          option.choices[0] != '@')
        continue;
      const std::string key = std::string(section) + "." + option.name;
      const std::string name = values.get_string(option.name);
      auto named = registry.find(option.choices + 1, name);
      if (!named.ok()) return named.status().with_context(key + " (" + description + ")");
      if (*named == found[i])
        return invalid_argument(key + ": " + description + " cannot name itself");
      if (std::find(found.begin(), found.end(), *named) == found.end()) found.push_back(*named);
    }
  }
  return found;
}

}  // namespace tessera
