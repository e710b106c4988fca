// tessera: generate text, score text, inspect models, list plugins.
#include <cstring>
#include <iostream>
#include <string_view>

#include "apps/tessera/cli_common.h"

namespace {

constexpr const char* kUsage = R"(tessera: an LLM inference runtime built from plugins

usage: tessera <command> [options]     (tessera <command> --help for each)

commands:
  generate     stream text from a model:   tessera generate --config configs/stories260k.toml --prompt "Once upon a time"
  perplexity   score a text file:          tessera perplexity --config configs/stories260k.toml --text story.txt
  inspect      describe a model file:      tessera inspect stories260K.gguf
  plugins      list the plugins found:     tessera plugins
  version      print the version and plugin ABI

Configs are TOML files (docs/config.md); every key can be overridden with --set key=value.
)";

}  // namespace

int main(int argc, char** argv) {
  using namespace tessera::cli;
  if (argc < 2) {
    std::cerr << kUsage;
    return kExitUsage;
  }
  const std::string_view command = argv[1];
  // Each subcommand parses argv from its own name on.
  if (command == "generate") return run_generate(argc - 1, argv + 1);
  if (command == "perplexity") return run_perplexity(argc - 1, argv + 1);
  if (command == "inspect") return run_inspect(argc - 1, argv + 1);
  if (command == "plugins") return run_plugins(argc - 1, argv + 1);
  if (command == "version" || command == "--version") {
    std::cout << "tessera " << TESSERA_VERSION << " (plugin ABI " << TESSERA_ABI_MAJOR << "."
              << TESSERA_ABI_MINOR << ", " << TESSERA_BUILD_FINGERPRINT << ")\n";
    return 0;
  }
  if (command == "--help" || command == "-h" || command == "help") {
    std::cout << kUsage;
    return 0;
  }
  std::cerr << "tessera: unknown command '" << command << "'\n\n" << kUsage;
  return kExitUsage;
}
