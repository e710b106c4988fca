// Finds, checks and creates plugins. Plugins come from two places: shared
// libraries (libtessera_<kind>_<name>.so) found on the search path, and
// descriptors linked into the binary by the embedded build. Both go through
// the same ABI check before any plugin code runs.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/plugin/abi.h"
#include "core/plugin/abi_check.h"
#include "core/plugin/options.h"
#include "core/plugin/plugin_object.h"
#include "core/status/status.h"

namespace tessera {

struct PluginRecord {
  const TesseraPluginDescriptor* descriptor = nullptr;  // static storage in the plugin
  std::string file;                                     // "(built in)" when linked in
  std::string kind() const { return descriptor->kind; }
  std::string name() const { return descriptor->name; }
  std::span<const OptionSpec> options() const {
    return {descriptor->options, descriptor->option_count};
  }
};

// A library that was found but refused (wrong ABI, no descriptor, dlopen error).
struct RejectedPlugin {
  std::string file;
  Status reason;
};

// The kinds a plugin may declare, in display order (core/plugin/plugin_kinds.h).
std::vector<std::string_view> plugin_kinds();

// The default directories, in order: `extra` (from [plugins] search_path), then
// TESSERA_PLUGIN_PATH (':'-separated), then next to the executable
// (../lib/tessera/plugins and ./plugins), then the build tree and the install tree.
std::vector<std::string> plugin_search_path(const std::vector<std::string>& extra);

class PluginRegistry {
 public:
  // Registers the built-in descriptors (the embedded build's table).
  explicit PluginRegistry(std::span<const TesseraPluginDescriptor* const> builtins = {});

  // Loads every libtessera_*.so in the directories, in order. A plugin whose
  // kind and name are already known is skipped (the first one found wins).
  // Libraries that cannot be used are recorded in rejected(); scanning itself
  // never fails.
  void scan(const std::vector<std::string>& directories);
  // Loads one library; the status says why it was refused.
  Result<const PluginRecord*> load_file(const std::string& path);

  const std::vector<PluginRecord>& plugins() const { return plugins_; }
  const std::vector<RejectedPlugin>& rejected() const { return rejected_; }
  const std::vector<std::string>& searched() const { return searched_; }

  // NotFound names the kind, the close matches, what is available and where it
  // looked; a refused library with a matching file name is mentioned too.
  Result<const PluginRecord*> find(std::string_view kind, std::string_view name) const;

  // Creates an object of a plugin whose options were already checked, with
  // the core's services (null: none; a plugin that needs them refuses).
  Result<std::unique_ptr<PluginObject>> create(const PluginRecord& record,
                                               const OptionValues& options,
                                               PluginServices* services = nullptr) const;

 private:
  Status add(const TesseraPluginDescriptor* descriptor, std::string file);

  std::vector<PluginRecord> plugins_;
  std::vector<RejectedPlugin> rejected_;
  std::vector<std::string> searched_;
};

// The error for an object that is not of its declared kind's interface.
Status wrong_object_kind(const PluginRecord& record);

// Creates an object and checks it is an `Interface` (the kind's class), so a
// plugin whose create() makes something else is refused, not cast blindly.
template <typename Interface>
Result<std::unique_ptr<Interface>> create_plugin(const PluginRegistry& registry,
                                                 const PluginRecord& record,
                                                 const OptionValues& options,
                                                 PluginServices* services = nullptr) {
  ASSIGN_OR_RETURN(std::unique_ptr<PluginObject> object,
                   registry.create(record, options, services));
  auto* typed = dynamic_cast<Interface*>(object.get());
  if (typed == nullptr) return wrong_object_kind(record);
  object.release();
  return std::unique_ptr<Interface>(typed);
}

}  // namespace tessera
