// tessera generate: stream text from the configured pipeline.
#include <cstdio>
#include <iostream>

#include "apps/tessera/cli_common.h"
#include "core/engine/engine.h"

namespace tessera::cli {

int run_generate(int argc, char** argv) {
  po::options_description options("options");
  options.add_options()("help,h", "show this help")(
      "config,c", po::value<std::string>()->required(), "TOML config file (see docs/config.md)")(
      "prompt,p", po::value<std::string>()->default_value(""),
      "text to continue; empty starts from BOS alone")(
      "max-tokens,n", po::value<int64_t>(), "tokens to generate (default: decode.max_tokens)")(
      "set,s", po::value<std::vector<std::string>>()->composing(),
      "override a config key, e.g. --set sampling.temperature=0.8 (repeatable)")(
      "quiet,q", "print only the generated text, no statistics");
  po::variables_map values;
  int exit_code = 0;
  if (!parse_arguments(argc, argv, options, {}, "usage: tessera generate --config FILE [options]",
                       R"(examples:
  tessera generate --config configs/stories260k.toml --prompt "Once upon a time"
  tessera generate --config configs/stories260k.toml --max-tokens 64 --set sampling.temperature=0.9 --set sampling.seed=7
  tessera generate --config configs/stories260k-llama2c.toml          # the llama2.c .bin checkpoint

The prompt is echoed, then the continuation streams as it is generated. Statistics
(tokens, tokens/s, why it stopped) go to stderr.
)",
                       values, exit_code))
    return exit_code;

  const auto overrides = set_overrides(values);
  auto config = load_config(values["config"].as<std::string>(), overrides);
  if (!config.ok()) return report("generate", config.status());
  auto registry = make_registry(&*config);
  auto engine = Engine::create(*config, *registry);
  if (!engine.ok()) return report("generate", engine.status());

  const Tokenizer& tokenizer = (*engine)->tokenizer();
  GenerationRequest request;
  request.prompt = tokenizer.encode(values["prompt"].as<std::string>(), /*add_bos=*/true);
  request.max_new_tokens = values.count("max-tokens") ? values["max-tokens"].as<int64_t>()
                                                      : (*engine)->default_new_tokens();
  if (request.max_new_tokens < 0) {
    std::cerr << "tessera generate: --max-tokens must be >= 0\n";
    return kExitUsage;
  }

  int32_t previous = tokenizer.bos();
  for (std::size_t i = 1; i < request.prompt.size(); ++i) {
    std::fputs(tokenizer.decode_token(previous, request.prompt[i]).c_str(), stdout);
    previous = request.prompt[i];
  }
  std::fflush(stdout);
  auto stats = (*engine)->generate(request, [&](int32_t token) {
    std::fputs(tokenizer.decode_token(previous, token).c_str(), stdout);
    std::fflush(stdout);
    previous = token;
    return true;
  });
  std::fputc('\n', stdout);
  std::fflush(stdout);
  if (!stats.ok()) return report("generate", stats.status());
  if (!values.count("quiet")) {
    const double tps =
        stats->decode_seconds > 0
            ? static_cast<double>(stats->generated_tokens - 1) / stats->decode_seconds
            : 0.0;
    std::fprintf(stderr,
                 "tessera: %lld prompt tokens, %lld generated, stop: %s; prefill %.2f ms, "
                 "decode %.1f tokens/s (%s)\n",
                 static_cast<long long>(stats->prompt_tokens),
                 static_cast<long long>(stats->generated_tokens), stats->stop_reason.c_str(),
                 stats->prefill_seconds * 1e3, tps, (*engine)->description().device.name.c_str());
  }
  return 0;
}

}  // namespace tessera::cli
