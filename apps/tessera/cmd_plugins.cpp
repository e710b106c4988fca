// tessera plugins: every plugin the registry finds, and every library it refused.
#include <cstdio>
#include <iostream>

#include "apps/tessera/cli_common.h"
#include "core/backend/backend.h"
#include "core/compressor/compressor.h"
#include "core/util/strings.h"

namespace tessera::cli {
namespace {

// A codec's storage with its default options, at common head sizes.
void print_codec_bits(const PluginRegistry& registry, const PluginRecord& record) {
  auto empty = Config::parse("", "defaults");
  if (!empty.ok()) return;
  auto options = empty->plugin_options("cache.codec", record.options(), record.name());
  if (!options.ok()) return;
  auto codec = create_plugin<Compressor>(registry, record, *options);
  if (!codec.ok()) return;
  std::string bits;
  for (const int head_dim : {64, 128}) {
    if (!(*codec)->supports(head_dim).ok()) continue;
    if (!bits.empty()) bits += ", ";
    bits += shortest_decimal((*codec)->bits_per_vector(head_dim)) + " at head_dim " +
            std::to_string(head_dim) + " (f16: " + std::to_string(16 * head_dim) + ")";
  }
  if (!bits.empty())
    std::printf("           bits per vector (default options): %s\n", bits.c_str());
}

// The devices a backend can run on, as backend.device counts them.
void print_backend_devices(const PluginRegistry& registry, const PluginRecord& record) {
  auto empty = Config::parse("", "defaults");
  if (!empty.ok()) return;
  auto options = empty->plugin_options("backend", record.options(), record.name());
  if (!options.ok()) return;
  auto backend = create_plugin<Backend>(registry, record, *options);
  if (!backend.ok()) {
    std::printf("           no device: %s\n", backend.status().message().c_str());
    return;
  }
  const std::vector<DeviceInfo> devices = (*backend)->devices();
  if (devices.size() == 1 && devices[0].host_memory) return;  // the host itself: nothing to add
  for (std::size_t i = 0; i < devices.size(); ++i) {
    const DeviceInfo& d = devices[i];
    std::string line = "device " + std::to_string(i) + ": " + d.name;
    if (!d.type.empty()) line += " (" + d.type + ")";
    if (d.memory_bytes > 0) line += ", " + std::to_string(d.memory_bytes >> 20) + " MiB";
    if (d.subgroup_size > 0) line += ", subgroup " + std::to_string(d.subgroup_size);
    line += std::string(", fp16 ") + (d.fp16 ? "yes" : "no");
    line += std::string(", int8 dot ") + (d.int8_dot ? "yes" : "no");
    std::printf("           %s\n", line.c_str());
  }
}

}  // namespace

int run_plugins(int argc, char** argv) {
  po::options_description options("options");
  options.add_options()("help,h", "show this help")(
      "config,c", po::value<std::string>(), "also search the config's [plugins] search_path")(
      "set,s", po::value<std::vector<std::string>>()->composing(), "override a config key");
  po::variables_map values;
  int exit_code = 0;
  if (!parse_arguments(argc, argv, options, {}, "usage: tessera plugins [--config FILE]",
                       R"(examples:
  tessera plugins
  TESSERA_PLUGIN_PATH=$HOME/my-plugins tessera plugins

Search order: [plugins] search_path of the config, TESSERA_PLUGIN_PATH (':'-separated),
next to the executable, the build tree, the install tree. The first plugin of a
kind and name wins. Libraries that were found but refused are listed with why.
)",
                       values, exit_code))
    return exit_code;

  std::optional<Config> config;
  if (values.count("config")) {
    const auto overrides = set_overrides(values);
    auto loaded = load_config(values["config"].as<std::string>(), overrides);
    if (!loaded.ok()) return report("plugins", loaded.status());
    config = std::move(loaded).value();
  }
  auto registry = make_registry(config ? &*config : nullptr);
  for (std::string_view kind : plugin_kinds()) {
    for (const PluginRecord& p : registry->plugins()) {
      if (p.kind() != kind) continue;
      const TesseraPluginDescriptor& d = *p.descriptor;
      std::printf("%-10s %-10s v%-7s ABI %u.%u  %s\n", d.kind, d.name, d.version, d.abi_major,
                  d.abi_minor, p.file.c_str());
      std::printf("           %s\n", d.description);
      for (const OptionSpec& o : p.options()) {
        const std::string allowed = allowed_values_text(o);
        std::printf("           option %s (%s, default %s%s): %s\n", o.name,
                    std::string(option_type_name(o.type)).c_str(), o.default_value,
                    allowed.empty() ? "" : ("; " + allowed).c_str(), o.description);
      }
      if (kind == "compressor") print_codec_bits(*registry, p);
      if (kind == "backend") print_backend_devices(*registry, p);
    }
  }
  for (const RejectedPlugin& r : registry->rejected())
    std::printf("refused    %s\n           %s\n", r.file.c_str(), r.reason.message().c_str());
  std::printf("searched: %s\n", join(registry->searched(), ", ").c_str());
  return 0;
}

}  // namespace tessera::cli
