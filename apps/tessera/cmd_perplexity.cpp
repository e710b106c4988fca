// tessera perplexity: mean negative log-likelihood of a text under the model.
#include <cmath>
#include <iostream>

#include "apps/tessera/cli_common.h"
#include "apps/tessera/progress.h"
#include "core/engine/engine.h"
#include "core/engine/perplexity.h"
#include "core/io/file_lookup.h"
#include "core/io/text_file.h"

namespace tessera::cli {
namespace {

// The tokenizer holds about 60 bytes per byte of text while it works.
constexpr uint64_t kMaxTextFileBytes = 64ull << 20;

}  // namespace

int run_perplexity(int argc, char** argv) {
  po::options_description options("options");
  options.add_options()("help,h", "show this help")(
      "config,c", po::value<std::string>()->required(), "TOML config file")(
      "text,t", po::value<std::string>()->required(), "UTF-8 text file to score")(
      "max-tokens,n", po::value<int64_t>(),
      "score only the first N tokens of the text (default: as many as the cache holds, or the "
      "whole text with a store that evicts)")(
      "window", po::value<int64_t>(),
      "score as llama.cpp's llama-perplexity -c N does: windows of N tokens, each from BOS, "
      "the second half of each scored (compare with its 'Final estimate')")(
      "chunks", po::value<int64_t>(),
      "with --window: that many windows at most (llama-perplexity "
      "--chunks)")("set,s", po::value<std::vector<std::string>>()->composing(),
                   "override a config key (repeatable)");
  add_threads_option(options);
  po::variables_map values;
  int exit_code = 0;
  if (!parse_arguments(argc, argv, options, {},
                       "usage: tessera perplexity --config FILE --text FILE [--max-tokens N]",
                       R"(examples:
  tessera perplexity --config configs/stories260k.toml --text tinystories_train_head.txt --max-tokens 256
  tessera perplexity --config configs/tok512-ar-1m.toml --text tinyshakespeare.txt --set cache.max_tokens=1024

  tessera perplexity --config FILE --text wiki.test.raw --window 512 --chunks 8   # as llama-perplexity -c 512 --chunks 8
The last needs a config of your own model (FILE) and wikitext-2's test file
(wiki.test.raw), downloaded.

The text is found as given (absolute, or relative to the current directory), then
in TESSERA_MODEL_PATH, models/, ../shared/models/, data/ and ../shared/data/ next
to the repository root.
The text (a regular file of at most 64 MiB) is tokenized with BOS in front; token i is predicted from BOS and the
tokens before it. The last line is `tokens=N nll=X ppl=Y` (nll in nats per
token, ppl = exp(nll)). With --window, tokens counts the predictions scored.
)",
                       values, exit_code))
    return exit_code;

  const auto overrides = config_overrides(values);
  auto config = load_config(values["config"].as<std::string>(), overrides);
  if (!config.ok()) return report("perplexity", config.status());

  auto found = locate_data_file(values["text"].as<std::string>(), ".");
  if (!found.ok()) return report("perplexity", found.status());
  const std::string text_path = *found;
  auto text = read_text_file(text_path, "text file", kMaxTextFileBytes);
  if (!text.ok()) return report("perplexity", text.status());

  auto registry = make_registry(&*config);
  auto engine = Engine::create(*config, *registry);
  if (!engine.ok()) return report("perplexity", engine.status());
  print_warnings("perplexity", (*engine)->warnings());

  auto encoded = (*engine)->tokenizer().encode(*text, /*add_bos=*/true);
  if (!encoded.ok()) return report("perplexity", encoded.status().with_context(text_path));
  std::vector<int32_t>& tokens = *encoded;
  if (values.count("window")) {
    const Tokenizer& tokenizer = (*engine)->tokenizer();
    const int64_t window = values["window"].as<int64_t>();
    const int64_t chunks = values.count("chunks") ? values["chunks"].as<int64_t>() : 0;
    Progress progress(
        "scoring", "windows",
        chunks > 0 ? chunks : static_cast<int64_t>(tokens.size()) / std::max<int64_t>(window, 1));
    auto result =
        score_windows(**engine, tokens, window, chunks, tokenizer.adds_bos() ? tokenizer.bos() : -1,
                      [&](int64_t done, int64_t) { progress.update(done); });
    progress.finish();
    if (!result.ok()) return report("perplexity", result.status().with_context("--window"));
    std::printf("tokens=%lld nll=%.6f ppl=%.6f\n", static_cast<long long>(result->tokens),
                result->mean_nll, std::exp(result->mean_nll));
    return 0;
  }
  int64_t wanted = static_cast<int64_t>(tokens.size()) - 1;
  if (values.count("max-tokens")) {
    const int64_t n = values["max-tokens"].as<int64_t>();
    if (n < 1) {
      std::cerr << "tessera perplexity: --max-tokens must be >= 1\n";
      return kExitUsage;
    }
    wanted = std::min(wanted, n);
  } else if (!(*engine)->cache().policy().evicts) {
    wanted = std::min(wanted, (*engine)->max_tokens());
  }
  if (wanted < 1)
    return report(
        "perplexity",
        invalid_argument("text file '" + text_path + "' " +
                         (text->empty() ? std::string("is empty")
                                        : "gives " + std::to_string(tokens.size()) + " token") +
                         "; scoring needs two tokens at least (the first is "
                         "predicted from nothing, so it is not scored)"));
  tokens.resize(static_cast<std::size_t>(wanted) + 1);

  Progress progress("scoring", "tokens", static_cast<int64_t>(tokens.size()) - 1);
  auto result =
      score_tokens(**engine, tokens, [&](int64_t done, int64_t) { progress.update(done); });
  progress.finish();
  if (!result.ok()) return report("perplexity", result.status());
  std::printf("tokens=%lld nll=%.6f ppl=%.6f\n", static_cast<long long>(result->tokens),
              result->mean_nll, std::exp(result->mean_nll));
  return 0;
}

}  // namespace tessera::cli
