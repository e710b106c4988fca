// Pieces every subcommand shares: loading a config with --set overrides,
// finding plugins, and reporting errors the same way.
#pragma once

#include <boost/program_options.hpp>
#include <memory>
#include <string>
#include <vector>

#include "core/config/config.h"
#include "core/plugin/registry.h"
#include "core/status/status.h"

namespace tessera::cli {

namespace po = boost::program_options;

// Exit codes: 0 ok, 1 a runtime error (bad file, plugin, ...), 2 bad usage.
inline constexpr int kExitError = 1;
inline constexpr int kExitUsage = 2;

// Prints "tessera <command>: error: <message>" to stderr and returns kExitError.
int report(std::string_view command, const Status& status);

// Parses argv for a subcommand. Returns nullopt-like false and prints help or
// the usage error; `exit_code` says what to return then.
bool parse_arguments(int argc, char** argv, const po::options_description& options,
                     const po::positional_options_description& positional, const std::string& usage,
                     const std::string& examples, po::variables_map& values, int& exit_code);

// The values of every --set option given (none: empty).
std::vector<std::string> set_overrides(const po::variables_map& values);

// The config file with every --set applied and the core keys validated.
Result<Config> load_config(const std::string& path, const std::vector<std::string>& overrides);

// A registry with the built-in plugins, after scanning the search path
// (the config's [plugins] search_path first, when a config is given).
std::unique_ptr<PluginRegistry> make_registry(const Config* config);

int run_generate(int argc, char** argv);
int run_perplexity(int argc, char** argv);
int run_inspect(int argc, char** argv);
int run_plugins(int argc, char** argv);

}  // namespace tessera::cli
