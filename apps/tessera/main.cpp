// tessera: generate text, score text, sweep configurations, inspect and quantize models,
// list plugins.
#include <csignal>
#include <cstring>
#include <exception>
#include <iostream>
#include <new>
#include <string_view>

#include "apps/tessera/cli_common.h"

namespace {

constexpr const char* kUsage = R"(tessera: an LLM inference runtime built from plugins

usage: tessera <command> [options]     (tessera <command> --help for each)

commands:
  generate     stream text from a model:   tessera generate --config configs/stories260k.toml --prompt "Once upon a time"
  chat         a multi-turn conversation:  tessera chat --config configs/stories260k.toml --template chatml --system "Be brief."   # K/V kept across turns
  serve        sessions over HTTP (OpenAI API): tessera serve --config configs/serve-stories260k.toml
  perplexity   score a text file:          tessera perplexity --config configs/stories260k.toml --text tinystories_train_head.txt
  sweep        measure a grid of configs:  tessera sweep --config sweeps/codec-window.toml --out /tmp/codec-window
  bench        prompt and generation speed: tessera bench --config configs/stories260k.toml --threads 1,2
               speculative against plain:  tessera bench --spec --config configs/tok512-ar-1m-spec.toml
  fit-projection  K/V restoration's linear map: tessera fit-projection --config configs/tok512-ar-1m-restored.toml --text tinystories_train_head.txt --out /tmp/ar1m-from-sdar.kvproj
  inspect      describe a model file:      tessera inspect stories260K.gguf
  quantize     convert a model's weights:  tessera quantize stories260K.gguf /tmp/stories260K-q8_0.gguf q8_0
  make-model   random weights, real shape: tessera make-model --shape 110m --vocab-from ggml-vocab-llama-spm.gguf --out /tmp/110m.gguf
  tokenize     text to token ids:          tessera tokenize --model stories260K.gguf --text "Hello" --pieces
  plugins      list the plugins found:     tessera plugins
  version      print the version and plugin ABI

Configs are TOML files (docs/config.md); every key can be overridden with --set key=value.
)";

int run_command(int argc, char** argv) {
  using namespace tessera::cli;
  if (argc < 2) {
    std::cerr << kUsage;
    return kExitUsage;
  }
  const std::string_view command = argv[1];
  // Each subcommand parses argv from its own name on.
  if (command == "generate") return run_generate(argc - 1, argv + 1);
  if (command == "chat") return run_chat(argc - 1, argv + 1);
  if (command == "serve") return run_serve(argc - 1, argv + 1);
  if (command == "perplexity") return run_perplexity(argc - 1, argv + 1);
  if (command == "sweep") return run_sweep(argc - 1, argv + 1);
  if (command == "inspect") return run_inspect(argc - 1, argv + 1);
  if (command == "bench") return run_bench(argc - 1, argv + 1);
  if (command == "fit-projection") return run_fit_projection(argc - 1, argv + 1);
  if (command == "quantize") return run_quantize(argc - 1, argv + 1);
  if (command == "make-model") return run_make_model(argc - 1, argv + 1);
  if (command == "tokenize") return run_tokenize(argc - 1, argv + 1);
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

}  // namespace

int main(int argc, char** argv) {
  // A reader that goes away (`tessera generate ... | head`) shows up as EPIPE
  // from a write, which each command handles, not as a silent death by signal.
  std::signal(SIGPIPE, SIG_IGN);
  int code = tessera::cli::kExitError;
  try {
    code = run_command(argc, argv);
  } catch (const std::bad_alloc&) {
    std::cerr << "tessera: error: out of memory\n";
    return tessera::cli::kExitError;
  } catch (const std::exception& e) {
    // Every expected failure is a Status; reaching here is a bug worth reporting.
    std::cerr << "tessera: internal error: " << e.what() << "\n";
    return tessera::cli::kExitError;
  }
  return tessera::cli::finish_output(code);
}
