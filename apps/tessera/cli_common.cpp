#include "apps/tessera/cli_common.h"

#include <iostream>

#include "core/plugin/builtin_plugins.h"

namespace tessera::cli {

int report(std::string_view command, const Status& status) {
  std::cerr << "tessera " << command << ": error: " << status.message() << " ["
            << status_code_name(status.code()) << "]\n";
  return kExitError;
}

bool parse_arguments(int argc, char** argv, const po::options_description& options,
                     const po::positional_options_description& positional, const std::string& usage,
                     const std::string& examples, po::variables_map& values, int& exit_code) {
  try {
    po::store(po::command_line_parser(argc, argv).options(options).positional(positional).run(),
              values);
    if (values.count("help")) {
      std::cout << usage << "\n\n" << options << "\n" << examples;
      exit_code = 0;
      return false;
    }
    po::notify(values);
  } catch (const po::error& e) {
    std::cerr << "tessera: " << e.what() << "\n\n" << usage << "\n(see --help)\n";
    exit_code = kExitUsage;
    return false;
  }
  return true;
}

std::vector<std::string> set_overrides(const po::variables_map& values) {
  return values.count("set") ? values["set"].as<std::vector<std::string>>()
                             : std::vector<std::string>{};
}

Result<Config> load_config(const std::string& path, const std::vector<std::string>& overrides) {
  ASSIGN_OR_RETURN(Config config, Config::load_file(path));
  for (const auto& assignment : overrides) RETURN_IF_ERROR(config.apply_override(assignment));
  RETURN_IF_ERROR(config.validate_core());
  return config;
}

std::unique_ptr<PluginRegistry> make_registry(const Config* config) {
  auto registry = std::make_unique<PluginRegistry>(builtin_plugins());
  std::vector<std::string> extra;
  if (config) {
    for (const auto& dir : config->get_list("plugins.search_path")) {
      // Relative directories are relative to the config file.
      std::filesystem::path p(dir);
      extra.push_back(p.is_absolute() ? dir : (config->directory() / p).string());
    }
  }
  registry->scan(plugin_search_path(extra));
  return registry;
}

}  // namespace tessera::cli
