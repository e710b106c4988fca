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

// --threads N on a command that runs a model: shorthand for
// --set backend.threads=N, as bench's --threads is for its thread counts.
void add_threads_option(po::options_description& options);
// The --set values, then backend.threads=N for --threads N (after them, so
// --threads wins, as in bench).
std::vector<std::string> config_overrides(const po::variables_map& values);

// The config file with every --set applied and the core keys validated.
Result<Config> load_config(const std::string& path, const std::vector<std::string>& overrides);

// Writes `text` to stdout and flushes it. False once a write has failed (the
// reader went away: EPIPE, or a full disk); callers stop producing output then.
bool write_stdout(std::string_view text);
// Whether stdout's reader went away (a closed pipe, as with `| head`).
bool stdout_closed();
// The exit code once a command returned `code`: a closed pipe is a normal end
// (the reader had enough), any other failed write is an error, reported here.
int finish_output(int code);

// Prints each of the engine's warnings to stderr ("tessera <command>: warning: ...").
void print_warnings(std::string_view command, const std::vector<std::string>& warnings);

// A registry with the built-in plugins, after scanning the search path
// (the config's [plugins] search_path first, when a config is given).
std::unique_ptr<PluginRegistry> make_registry(const Config* config);

int run_generate(int argc, char** argv);
int run_chat(int argc, char** argv);
int run_serve(int argc, char** argv);
int run_perplexity(int argc, char** argv);
int run_inspect(int argc, char** argv);
int run_plugins(int argc, char** argv);
int run_sweep(int argc, char** argv);
int run_quantize(int argc, char** argv);
int run_make_model(int argc, char** argv);
int run_tokenize(int argc, char** argv);
int run_bench(int argc, char** argv);
int run_fit_projection(int argc, char** argv);

}  // namespace tessera::cli
