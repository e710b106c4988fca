#include "tests/backend/conformance/backends_under_test.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string_view>

#include "backends/cpu/cpu_backend.h"
#include "core/config/config.h"
#include "core/plugin/builtin_plugins.h"
#include "core/plugin/registry.h"

namespace tessera::conformance {
namespace {

constexpr std::string_view kFlag = "--backend=";

std::vector<std::string> split_names(std::string_view text) {
  std::vector<std::string> names;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t end = std::min(text.find(',', start), text.size());
    if (end > start) names.emplace_back(text.substr(start, end - start));
    start = end + 1;
  }
  return names;
}

struct State {
  std::vector<std::string> selected;
  std::unique_ptr<PluginRegistry> registry;
  std::map<std::string, Result<std::unique_ptr<Backend>>, std::less<>> backends;
  std::unique_ptr<CpuBackend> reference;
};

State& state() {
  static State* s = new State();  // never destroyed: plugin code may run at exit
  return *s;
}

PluginRegistry& registry() {
  State& s = state();
  if (s.registry == nullptr) {
    s.registry = std::make_unique<PluginRegistry>(builtin_plugins());
    s.registry->scan(plugin_search_path({}));
  }
  return *s.registry;
}

Result<std::unique_ptr<Backend>> create_backend(const std::string& name) {
  const PluginRegistry& plugins = registry();
  ASSIGN_OR_RETURN(const PluginRecord* record, plugins.find("backend", name));
  // The plugin's declared options with their defaults, as an empty config
  // gives them to the engine.
  ASSIGN_OR_RETURN(Config config, Config::parse("", "conformance"));
  ASSIGN_OR_RETURN(OptionValues options,
                   config.plugin_options("backend", record->options(),
                                         "backend plugin '" + record->name() + "'"));
  ASSIGN_OR_RETURN(std::unique_ptr<Backend> backend,
                   create_plugin<Backend>(plugins, *record, options));
  BackendOptions init;
  init.threads = 1;
  RETURN_IF_ERROR(backend->init(init).with_context("backend '" + name + "': init"));
  const DeviceInfo info = backend->device_info();
  std::printf("conformance: backend '%s' (%s) on %s%s%s\n", name.c_str(), record->file.c_str(),
              info.name.c_str(), info.description.empty() ? "" : ": ", info.description.c_str());
  return backend;
}

}  // namespace

std::vector<std::string> select_backends(int& argc, char** argv) {
  State& s = state();
  bool from_flag = false;
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg.starts_with(kFlag)) {
      for (std::string& name : split_names(arg.substr(kFlag.size())))
        s.selected.push_back(std::move(name));
      from_flag = true;
      continue;
    }
    argv[kept++] = argv[i];
  }
  argc = kept;
  argv[argc] = nullptr;
  if (!from_flag) {
    if (const char* env = std::getenv("TESSERA_CONFORMANCE_BACKENDS"); env != nullptr && *env)
      s.selected = split_names(env);
  }
  if (!from_flag && s.selected.empty()) {
    for (const PluginRecord& record : registry().plugins())
      if (record.kind() == "backend") s.selected.push_back(record.name());
  }
  return s.selected;
}

const std::vector<std::string>& selected_backends() {
  return state().selected;
}

Result<Backend*> backend_under_test(const std::string& name) {
  State& s = state();
  auto it = s.backends.find(name);
  if (it == s.backends.end()) it = s.backends.emplace(name, create_backend(name)).first;
  if (!it->second.ok()) return it->second.status();
  return it->second.value().get();
}

Backend& reference_backend() {
  State& s = state();
  if (s.reference == nullptr) {
    s.reference = std::make_unique<CpuBackend>();
    BackendOptions init;
    init.threads = 1;
    const Status status = s.reference->init(init);
    TESSERA_CHECK(status.ok(), status.to_string());
  }
  return *s.reference;
}

void release_backends() {
  State& s = state();
  s.backends.clear();
  s.reference.reset();
}

}  // namespace tessera::conformance
