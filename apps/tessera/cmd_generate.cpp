// tessera generate: stream text from the configured pipeline.
#include <cstdio>
#include <iostream>
#include <string>

#include "apps/tessera/chat_prompt.h"
#include "apps/tessera/cli_common.h"
#include "core/engine/engine.h"

namespace tessera::cli {
namespace {

std::string mib(std::size_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3f MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
  return text;
}

void print_decode_stats(Engine& engine, const GenerationStats& stats) {
  const DecodeCounters& c = stats.decode;
  if (engine.drafts())
    std::fprintf(stderr,
                 "speculative: steps=%lld drafted=%lld accepted=%lld tokens_per_step=%.3f "
                 "(acceptance %.3f per drafted token, %lld target forwards, %lld draft forwards, "
                 "%s proposer; %.1f%% of the step time drafting)\n",
                 static_cast<long long>(c.verify_steps), static_cast<long long>(c.drafted),
                 static_cast<long long>(c.accepted),
                 c.verify_steps > 0 ? static_cast<double>(c.emitted) / c.verify_steps : 0.0,
                 c.drafted > 0 ? static_cast<double>(c.accepted) / c.drafted : 0.0,
                 static_cast<long long>(c.target_forwards),
                 static_cast<long long>(c.draft_forwards), engine.description().proposer.c_str(),
                 c.propose_seconds + c.verify_seconds > 0
                     ? 100.0 * c.propose_seconds / (c.propose_seconds + c.verify_seconds)
                     : 0.0);
  if (c.denoise_forwards > 0) {
    // Tokens the user got (a block past max_tokens is decoded whole) per
    // forward of the target; commit forwards include the prompt's prefill.
    const int64_t forwards = c.denoise_forwards + c.commit_forwards;
    std::fprintf(stderr,
                 "diffusion: denoise_forwards=%lld commit_forwards=%lld tokens=%lld "
                 "tokens_per_forward=%.3f (%.3f per denoise forward)\n",
                 static_cast<long long>(c.denoise_forwards),
                 static_cast<long long>(c.commit_forwards),
                 static_cast<long long>(stats.generated_tokens),
                 forwards > 0 ? static_cast<double>(stats.generated_tokens) / forwards : 0.0,
                 static_cast<double>(stats.generated_tokens) / c.denoise_forwards);
  }
  if (c.restoration_steps > 0)
    std::fprintf(
        stderr,
        "restoration: steps=%lld restored_positions=%lld (%.1f per step) "
        "restorer_forwards=%lld peak_transient=%s (beside the store's live bytes)\n",
        static_cast<long long>(c.restoration_steps), static_cast<long long>(c.restored_positions),
        static_cast<double>(c.restored_positions) / c.restoration_steps,
        static_cast<long long>(c.restorer_forwards), mib(c.restoration_peak_bytes).c_str());
  if (!stats.branch_tokens.empty())
    std::fprintf(stderr, "branches:   %zu, layout %s, %lld entries stored, %s copied\n",
                 stats.branch_tokens.size(),
                 engine.branch_layout() == BranchLayout::kBim ? "bim" : "batched",
                 static_cast<long long>(stats.kv_entries), mib(stats.kv_copied_bytes).c_str());
}

void print_cache_stats(Engine& engine, const GenerationStats& stats) {
  const EngineDescription& d = engine.description();
  const int head_dim = engine.model().config.head_dim;
  const double bits = engine.codec_bits_per_head_vector();
  const int64_t tokens = stats.prompt_tokens + stats.generated_tokens;
  const double seconds = stats.prefill_seconds + stats.decode_seconds;
  std::fprintf(stderr,
               "kv cache:   %s store, %s codec: %.1f bits per vector (f32 is %d), %lld entries "
               "stored at the end\n"
               "kv bytes:   live %s, peak %s, reserved %s (%.1f bytes per stored entry)\n"
               "tokens:     %lld (%lld prompt + %lld generated) in %.3f s: %.1f tokens/s\n",
               d.cache.c_str(), d.codec.c_str(), bits, 32 * head_dim,
               static_cast<long long>(stats.kv_entries), mib(stats.kv_live_bytes).c_str(),
               mib(stats.kv_peak_bytes).c_str(), mib(stats.kv_capacity_bytes).c_str(),
               stats.kv_entries > 0 ? static_cast<double>(stats.kv_live_bytes) /
                                          static_cast<double>(stats.kv_entries)
                                    : 0.0,
               static_cast<long long>(tokens), static_cast<long long>(stats.prompt_tokens),
               static_cast<long long>(stats.generated_tokens), seconds,
               seconds > 0 ? static_cast<double>(tokens) / seconds : 0.0);
  if (engine.cache().group_count() > 1)
    std::fprintf(stderr, "kv layers:  %s (entries: the first group's)\n",
                 engine.cache().describe_groups().c_str());
  if (const DeviceInfo device = engine.backend().device_info(); !device.host_memory) {
    const int64_t split = engine.transformer().codec_split_layers();
    std::fprintf(stderr, "kv memory:  %s%s\n",
                 engine.cache().kv_in_backend() ? ("on " + device.name).c_str() : "host",
                 split > 0 ? (", " + std::to_string(split) +
                              " layer passes split at the codec point (the device does not "
                              "read the codec's records: K/V read back, encoded and decoded on "
                              "the host)")
                                 .c_str()
                           : "");
  }
}

// The prompt echoed (unless it is a rendered chat), then the continuation
// streamed as it is generated. A reader that went away (`| head`) stops
// generation: there is no one to generate for.
Result<GenerationStats> stream_one(Engine& engine, const GenerationRequest& request, bool echo) {
  const Tokenizer& tokenizer = engine.tokenizer();
  // The text after BOS reads as it would in a story.
  int32_t previous = tokenizer.bos();
  const bool starts_with_bos = !request.prompt.empty() && request.prompt[0] == previous;
  std::size_t echo_from = starts_with_bos ? 1 : 0;
  if (!echo) echo_from = request.prompt.size();
  for (std::size_t i = echo_from; i < request.prompt.size(); ++i) {
    write_stdout(tokenizer.decode_token(previous, request.prompt[i]));
    previous = request.prompt[i];
  }
  auto stats = engine.generate(request, [&](int32_t token, int) {
    const bool written = write_stdout(tokenizer.decode_token(previous, token));
    previous = token;
    return written;
  });
  write_stdout("\n");
  return stats;
}

// Each branch's text (prompt, branch, continuation), labelled, once all are done.
Result<GenerationStats> print_branches(Engine& engine, const GenerationRequest& request) {
  const Tokenizer& tokenizer = engine.tokenizer();
  std::vector<std::vector<int32_t>> tokens(request.branches.size());
  for (std::size_t b = 0; b < request.branches.size(); ++b) {
    tokens[b] = request.prompt;
    tokens[b].insert(tokens[b].end(), request.branches[b].begin(), request.branches[b].end());
  }
  auto stats = engine.generate(request, [&](int32_t token, int lane) {
    tokens[static_cast<std::size_t>(lane)].push_back(token);
    return true;
  });
  if (!stats.ok()) return stats;
  for (std::size_t b = 0; b < tokens.size(); ++b) {
    std::string text = "[branch " + std::to_string(b + 1) + "] ";
    int32_t previous = tokenizer.bos();
    for (std::size_t i = 0; i < tokens[b].size(); ++i) {
      if (i == 0 && tokens[b][i] == previous) continue;
      text += tokenizer.decode_token(previous, tokens[b][i]);
      previous = tokens[b][i];
    }
    write_stdout(text + "\n");
  }
  return stats;
}

// --prompt as the user message of a one-turn chat, rendered and encoded.
// Errors of the template's choice name --template; the rest, --prompt.
Result<std::vector<int32_t>> chat_prompt(const Engine& engine, const po::variables_map& values) {
  std::vector<std::string> warnings;
  auto setup =
      chat_setup(engine, values["template"].as<std::string>(), "--template",
                 values.count("system") ? values["system"].as<std::string>() : "", warnings);
  print_warnings("generate", warnings);
  if (!setup.ok()) return setup.status();
  setup->request.messages.push_back({"user", values["prompt"].as<std::string>()});
  setup->request.add_generation_prompt = true;
  auto text = setup->chat_template->render(setup->request);
  if (!text.ok()) return text.status().with_context("--prompt");
  auto tokens = encode_chat_text(engine.tokenizer(), *text, /*sequence_start=*/true);
  if (!tokens.ok()) return tokens.status().with_context("--prompt");
  return tokens;
}

}  // namespace

int run_generate(int argc, char** argv) {
  po::options_description options("options");
  options.add_options()("help,h", "show this help")(
      "config,c", po::value<std::string>()->required(), "TOML config file (see docs/config.md)")(
      "prompt,p", po::value<std::string>()->default_value(""),
      "text to continue; empty starts from BOS alone")(
      "max-tokens,n", po::value<int64_t>(), "tokens to generate (default: decode.max_tokens)")(
      "set,s", po::value<std::vector<std::string>>()->composing(),
      "override a config key, e.g. --set sampling.temperature=0.8 (repeatable)")(
      "branch,b", po::value<std::vector<std::string>>()->composing(),
      "a continuation of the prompt decoded as a branch of its own, side by side with the "
      "others in one forward per step (repeatable; each printed labelled at the end)")(
      "chat",
      "treat --prompt as a user message: render it with the chat template, print "
      "only the reply, stop at the end of the turn")(
      "system", po::value<std::string>(), "a system message before the prompt (implies --chat)")(
      "template", po::value<std::string>()->default_value(""),
      "with --chat: a built-in template (chatml, llama3, gemma) or a Jinja file; default: the "
      "model's own (GGUF tokenizer.chat_template or tokenizer_config.json), else chatml")(
      "ignore-eos",
      "generate past the vocabulary's end-of-generation tokens (as llama.cpp's "
      "--ignore-eos)")("quiet,q", "print only the generated text, no statistics")(
      "stats",
      "after the text, print the KV cache's bytes (live, peak, reserved), the codec's "
      "bits per vector, tokens and tokens/s on stderr; with a proposer, the speculative "
      "counts (steps, drafted, accepted, tokens per step); with verifier restored, the "
      "restoration line (steps, restored positions, the per-step transient peak)");
  add_threads_option(options);
  po::variables_map values;
  int exit_code = 0;
  if (!parse_arguments(argc, argv, options, {}, "usage: tessera generate --config FILE [options]",
                       R"(examples:
  tessera generate --config configs/stories260k.toml --prompt "Once upon a time"
  tessera generate --config configs/stories260k.toml --max-tokens 64 --set sampling.temperature=0.9 --set sampling.seed=7
  tessera generate --config configs/stories260k-llama2c.toml          # the llama2.c .bin checkpoint
  tessera generate --config configs/stories260k.toml --stats --set cache.plugin=sink_window --set cache.window=64
  tessera generate --config configs/tok512-ar-1m.toml --stats --set decode.proposer=ar_draft --set decode.draft_model=stories260K.gguf
  tessera generate --config configs/stories260k.toml --prompt "Tom had a dog." --branch " The dog" --branch " One day" --max-tokens 40
  tessera generate --config configs/stories260k.toml --chat --template chatml --system "Answer briefly." --prompt "What is a KV cache?"

The prompt is echoed, then the continuation streams as it is generated. With
--branch, each branch (prompt + branch text + continuation) is printed labelled
once all are done. Statistics (tokens, tokens/s, why it stopped) go to stderr.
)",
                       values, exit_code))
    return exit_code;

  const auto overrides = config_overrides(values);
  auto config = load_config(values["config"].as<std::string>(), overrides);
  if (!config.ok()) return report("generate", config.status());
  auto registry = make_registry(&*config);
  auto engine = Engine::create(*config, *registry);
  if (!engine.ok()) return report("generate", engine.status());
  print_warnings("generate", (*engine)->warnings());

  const Tokenizer& tokenizer = (*engine)->tokenizer();
  GenerationRequest request;
  const bool chat = values.count("chat") > 0 || values.count("system") > 0;
  auto prompt = chat ? chat_prompt(**engine, values)
                     : tokenizer.encode(values["prompt"].as<std::string>(), /*add_bos=*/true);
  if (!prompt.ok())
    return report("generate", chat ? prompt.status() : prompt.status().with_context("--prompt"));
  request.prompt = std::move(prompt).value();
  request.stop_at_eos = values.count("ignore-eos") == 0;
  request.max_new_tokens = values.count("max-tokens") ? values["max-tokens"].as<int64_t>()
                                                      : (*engine)->default_new_tokens();
  if (request.max_new_tokens < 0) {
    std::cerr << "tessera generate: --max-tokens must be >= 0\n";
    return kExitUsage;
  }

  std::vector<std::string> branch_texts;
  if (values.count("branch")) branch_texts = values["branch"].as<std::vector<std::string>>();
  for (const std::string& text : branch_texts) {
    auto branch = tokenizer.encode(text, /*add_bos=*/false, /*continuation=*/true);
    if (!branch.ok()) return report("generate", branch.status().with_context("--branch"));
    request.branches.push_back(std::move(branch).value());
  }
  Result<GenerationStats> stats = branch_texts.empty()
                                      ? stream_one(**engine, request, /*echo=*/!chat)
                                      : print_branches(**engine, request);
  if (!stats.ok()) return report("generate", stats.status());
  if (!values.count("quiet")) {
    const double tps = stats->decode_seconds > 0
                           ? static_cast<double>(stats->generated_tokens -
                                                 static_cast<int64_t>(std::max<std::size_t>(
                                                     1, request.branches.size()))) /
                                 stats->decode_seconds
                           : 0.0;
    std::fprintf(stderr,
                 "tessera: %lld prompt tokens, %lld generated, stop: %s; prefill %.2f ms, "
                 "decode %.1f tokens/s (%s)\n",
                 static_cast<long long>(stats->prompt_tokens),
                 static_cast<long long>(stats->generated_tokens),
                 stdout_closed() ? "output closed" : stats->stop_reason.c_str(),
                 stats->prefill_seconds * 1e3, tps, (*engine)->description().device.name.c_str());
  }
  if (values.count("stats")) print_decode_stats(**engine, *stats);
  if (values.count("stats")) print_cache_stats(**engine, *stats);
  return 0;
}

}  // namespace tessera::cli
