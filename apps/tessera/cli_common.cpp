#include "apps/tessera/cli_common.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <utility>

#include "core/plugin/builtin_plugins.h"

namespace tessera::cli {
namespace {

int write_errno = 0;  // the errno of the first failed write to stdout, or 0

void note_stdout_error() {
  if (write_errno == 0) write_errno = errno != 0 ? errno : EIO;
  std::clearerr(stdout);
}

// "--set KEY VALUE" (a space where the '=' goes) in argv: {KEY, VALUE}, or
// empty strings when there is none. Boost reads VALUE as a positional
// argument and says only that there are too many of them.
std::pair<std::string, std::string> set_with_a_space(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    std::string_view key;
    int value_at = i + 1;
    if (arg == "--set" || arg == "-s") {
      if (i + 1 >= argc) break;
      key = argv[i + 1];
      value_at = i + 2;
    } else if (arg.substr(0, 6) == "--set=") {
      key = arg.substr(6);
    } else {
      continue;
    }
    if (value_at >= argc || key.empty() || key.find('=') != std::string_view::npos) continue;
    const std::string_view value = argv[value_at];
    if (value.substr(0, 2) == "--") continue;
    return {std::string(key), std::string(value)};
  }
  return {};
}

}  // namespace

bool write_stdout(std::string_view text) {
  if (write_errno != 0) return false;
  errno = 0;
  if (std::fwrite(text.data(), 1, text.size(), stdout) != text.size() || std::fflush(stdout) != 0) {
    note_stdout_error();
    return false;
  }
  return true;
}

bool stdout_closed() {
  return write_errno == EPIPE;
}

int finish_output(int code) {
  errno = 0;
  if (std::fflush(stdout) != 0 || std::ferror(stdout)) note_stdout_error();
  if (write_errno == 0 || write_errno == EPIPE) return code;
  std::cerr << "tessera: error: cannot write the output: " << std::strerror(write_errno) << "\n";
  return code == 0 ? kExitError : code;
}

void print_warnings(std::string_view command, const std::vector<std::string>& warnings) {
  for (const auto& warning : warnings)
    std::cerr << "tessera " << command << ": warning: " << warning << "\n";
}

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
    if (const auto [key, value] = set_with_a_space(argc, argv); !key.empty()) {
      std::cerr << "tessera: --set takes key=value as one argument: write --set " << key << "="
                << value << ", not --set " << key << " " << value << "\n\n"
                << usage << "\n(see --help)\n";
    } else {
      std::cerr << "tessera: " << e.what() << "\n\n" << usage << "\n(see --help)\n";
    }
    exit_code = kExitUsage;
    return false;
  }
  return true;
}

std::vector<std::string> set_overrides(const po::variables_map& values) {
  return values.count("set") ? values["set"].as<std::vector<std::string>>()
                             : std::vector<std::string>{};
}

void add_threads_option(po::options_description& options) {
  options.add_options()("threads", po::value<int>()->value_name("N"),
                        "threads for the backend: shorthand for --set backend.threads=N");
}

std::vector<std::string> config_overrides(const po::variables_map& values) {
  std::vector<std::string> overrides = set_overrides(values);
  if (values.count("threads"))
    overrides.push_back("backend.threads=" + std::to_string(values["threads"].as<int>()));
  return overrides;
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
