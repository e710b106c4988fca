#include "core/plugin/registry.h"

#include <algorithm>
#include <array>
#include <boost/dll/runtime_symbol_info.hpp>
#include <boost/dll/shared_library.hpp>
#include <cstring>
#include <filesystem>
#include <mutex>

#include "core/plugin/abi_check.h"
#include "core/plugin/plugin_kinds.h"
#include "core/util/path_list.h"
#include "core/util/strings.h"
#include "core/util/suggest.h"

namespace tessera {
namespace {

constexpr std::string_view kBuiltIn = "(built in)";

// Libraries stay loaded until the process exits: plugin objects (and their
// vtables) may live as long as the process, and unloading a library whose
// objects are alive crashes at exit. Keeping them is what ggml's registry does too.
std::vector<boost::dll::shared_library>& loaded_libraries() {
  static auto* libraries = new std::vector<boost::dll::shared_library>();
  return *libraries;
}
std::mutex& loaded_libraries_mutex() {
  static std::mutex m;
  return m;
}

bool is_plugin_file_name(const std::string& name) {
  return name.rfind("libtessera_", 0) == 0 && name.size() > 3 &&
         name.compare(name.size() - 3, 3, ".so") == 0 && name.rfind("libtessera_core", 0) != 0;
}

}  // namespace

std::vector<std::string_view> plugin_kinds() {
  std::vector<std::string_view> names;
  for (const PluginKind& kind : kPluginKinds) names.push_back(kind.name);
  return names;
}

std::vector<std::string> plugin_search_path(const std::vector<std::string>& extra) {
  std::vector<std::string> dirs = extra;
  for (auto& dir : path_list_from_env("TESSERA_PLUGIN_PATH")) dirs.push_back(std::move(dir));
  boost::system::error_code ec;
  const auto exe = boost::dll::program_location(ec);
  if (!ec) {
    const auto exe_dir = std::filesystem::path(exe.string()).parent_path();
    dirs.push_back((exe_dir.parent_path() / TESSERA_RELATIVE_PLUGIN_DIR).string());
    dirs.push_back((exe_dir / "plugins").string());
  }
  dirs.emplace_back(TESSERA_BUILD_PLUGIN_DIR);
  dirs.emplace_back(TESSERA_INSTALL_PLUGIN_DIR);
  // Same directory twice (e.g. exe-relative == build tree) is searched once.
  std::vector<std::string> unique;
  for (auto& d : dirs) {
    std::error_code fec;
    auto canonical = std::filesystem::weakly_canonical(d, fec);
    std::string key = fec ? d : canonical.string();
    if (std::find(unique.begin(), unique.end(), key) == unique.end()) unique.push_back(key);
  }
  return unique;
}

PluginRegistry::PluginRegistry(std::span<const TesseraPluginDescriptor* const> builtins) {
  for (const auto* d : builtins) {
    if (Status s = add(d, std::string(kBuiltIn)); !s.ok())
      rejected_.push_back({std::string(kBuiltIn), s});
  }
}

Status PluginRegistry::add(const TesseraPluginDescriptor* d, std::string file) {
  RETURN_IF_ERROR(check_plugin_descriptor(*d, file));
  for (const auto& p : plugins_) {
    if (p.kind() == d->kind && p.name() == d->name) {
      return failed_precondition(std::string(d->kind) + " '" + d->name + "' from " + file +
                                 " is shadowed by the one from " + p.file);
    }
  }
  plugins_.push_back({d, std::move(file)});
  return ok_status();
}

Result<const PluginRecord*> PluginRegistry::load_file(const std::string& path) {
  // Before dlopen: the loader trusts the headers (a truncated file would kill
  // the process), and a plugin built for another ABI must not run any code.
  RETURN_IF_ERROR(check_plugin_file(path));
  boost::dll::shared_library library;
  boost::system::error_code ec;
  library.load(path, boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local, ec);
  if (ec) return failed_precondition("cannot load plugin " + path + ": " + ec.message());
  if (!library.has(TESSERA_STRINGIFY(TESSERA_PLUGIN_SYMBOL))) {
    return failed_precondition(
        "plugin " + path + " exports no '" + TESSERA_STRINGIFY(TESSERA_PLUGIN_SYMBOL) +
        "' symbol; build it with TESSERA_PLUGIN(...) from core/plugin/sdk.h");
  }
  const auto& descriptor =
      library.get<const TesseraPluginDescriptor>(TESSERA_STRINGIFY(TESSERA_PLUGIN_SYMBOL));
  RETURN_IF_ERROR(add(&descriptor, path));
  {
    std::lock_guard lock(loaded_libraries_mutex());
    loaded_libraries().push_back(std::move(library));
  }
  return &plugins_.back();
}

void PluginRegistry::scan(const std::vector<std::string>& directories) {
  for (const auto& dir : directories) {
    searched_.push_back(dir);
    std::error_code ec;
    if (!std::filesystem::is_directory(dir, ec)) continue;
    std::vector<std::string> files;
    // increment(ec), not ++: a directory that fails mid-listing must not throw.
    for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
      const std::string name = it->path().filename().string();
      if (is_plugin_file_name(name)) files.push_back(it->path().string());
    }
    std::sort(files.begin(), files.end());  // a stable order across file systems
    for (const auto& file : files) {
      const bool known = std::any_of(plugins_.begin(), plugins_.end(),
                                     [&](const PluginRecord& p) { return p.file == file; });
      if (known) continue;
      auto loaded = load_file(file);
      if (!loaded.ok()) {
        // A shadowed duplicate is normal (build tree and install tree); keep quiet.
        if (loaded.status().message().find("is shadowed by") == std::string::npos)
          rejected_.push_back({file, loaded.status()});
      }
    }
  }
}

Result<const PluginRecord*> PluginRegistry::find(std::string_view kind,
                                                 std::string_view name) const {
  std::vector<std::string> same_kind;
  for (const auto& p : plugins_) {
    if (p.kind() != kind) continue;
    if (p.name() == name) return &p;
    same_kind.push_back(p.name());
  }
  std::string message = "no " + std::string(kind) + " plugin '" + std::string(name) + "'";
  message += same_kind.empty()
                 ? "; none of that kind was found"
                 : did_you_mean_then(name, same_kind) + "available: " + join(same_kind);
  const std::string expected_file = "libtessera_" + std::string(kind) + "_" + std::string(name);
  for (const auto& r : rejected_) {
    if (r.file.find(expected_file) != std::string::npos)
      message += "; " + r.file + " was found but refused: " + r.reason.message();
  }
  message += "; searched: " + (searched_.empty() ? std::string("(nothing)") : join(searched_));
  message += " (add a directory with [plugins] search_path or TESSERA_PLUGIN_PATH)";
  return not_found(message);
}

Status wrong_object_kind(const PluginRecord& record) {
  const PluginKind* kind = find_plugin_kind(record.kind());
  return failed_precondition("plugin " + record.file + " declares kind '" + record.kind() +
                             "', but the object its create() made is not a " +
                             std::string(kind ? kind->interface : "known interface") +
                             "; fix the class given to TESSERA_PLUGIN(...)");
}

Result<std::unique_ptr<PluginObject>> PluginRegistry::create(const PluginRecord& record,
                                                             const OptionValues& options,
                                                             PluginServices* services) const {
  Status status;
  PluginObject* object = record.descriptor->create(&options, services, &status);
  if (!object) {
    if (status.ok()) status = internal_error("create returned nothing and no error");
    return status.with_context(record.kind() + " plugin '" + record.name() + "' (" + record.file +
                               ")");
  }
  return std::unique_ptr<PluginObject>(object);
}

}  // namespace tessera
