// tessera chat: an interactive multi-turn conversation that keeps its K/V
// across turns. Each user line is rendered with the model's chat template;
// only the text the template adds after what the cache holds is fed.
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iostream>

#include "apps/tessera/chat_prompt.h"
#include "apps/tessera/cli_common.h"
#include "core/chat/conversation.h"
#include "core/engine/chat_lane.h"

namespace tessera::cli {
namespace {

void print_turn_stats(int turn, const TurnResult& result, int64_t cached) {
  const double tps =
      result.seconds > 0 ? static_cast<double>(result.reply.size()) / result.seconds : 0.0;
  std::fprintf(stderr,
               "[turn %d: %lld tokens fed after %lld kept in the cache, %zu generated, stop: %s, "
               "%.1f tokens/s, cache holds %lld]\n",
               turn, static_cast<long long>(result.fed_tokens),
               static_cast<long long>(result.history_tokens), result.reply.size(),
               result.stop_reason.c_str(), tps, static_cast<long long>(cached));
}

// Reads user lines until EOF or /exit; each gets a streamed reply.
Status converse(Engine& engine, ChatSetup& setup, std::istream& input, bool interactive,
                int64_t max_tokens, bool stats) {
  const Tokenizer& tokenizer = engine.tokenizer();
  ASSIGN_OR_RETURN(auto lane, ChatLane::begin(engine));
  chat::Conversation conversation(*setup.chat_template, setup.request);
  std::string line;
  bool added_bos = false;
  for (int turn = 1;; ++turn) {
    if (interactive) std::fputs("> ", stderr);
    if (!std::getline(input, line) || line == "/exit") break;
    if (line.empty()) {
      --turn;
      continue;
    }
    // What the template's text became, spelled back: a BOS the encoder added
    // (the template did not write it) is not part of that text.
    const std::string fed =
        tokenizer.decode(lane->tokens().subspan(added_bos ? 1 : 0), /*print_control=*/true);
    ASSIGN_OR_RETURN(const std::string text, conversation.add_user(line, fed));
    if (conversation.rewritten())
      std::fprintf(stderr,
                   "tessera chat: warning: %s rewrites earlier turns; appending the new "
                   "rendering past the old one, as llama.cpp does\n",
                   setup.origin.c_str());
    const bool sequence_start = lane->tokens().empty();
    ASSIGN_OR_RETURN(const std::vector<int32_t> tokens,
                     encode_chat_text(tokenizer, text, sequence_start));
    if (sequence_start)
      added_bos = !tokens.empty() && tokens[0] == tokenizer.bos() &&
                  !text.starts_with(
                      tokenizer.vocabulary().pieces[static_cast<std::size_t>(tokenizer.bos())]);
    // The reply as printed: each token's text after the one before it (the
    // first after the prompt's last token, so a leading space is kept).
    int32_t previous = tokens.empty() ? -1 : tokens.back();
    std::string reply;
    ASSIGN_OR_RETURN(const TurnResult result, lane->turn(tokens, max_tokens, [&](int32_t token) {
      const std::string piece = tokenizer.decode_token(previous, token);
      reply += piece;
      previous = token;
      return write_stdout(piece);
    }));
    write_stdout("\n");
    conversation.add_assistant(std::move(reply));
    if (stats) print_turn_stats(turn, result, lane->cached());
    if (result.stop_reason == "stopped" || result.stop_reason == "cache_full") {
      if (result.stop_reason == "cache_full")
        std::fprintf(stderr, "tessera chat: the cache is full (cache.max_tokens); ending\n");
      break;
    }
  }
  return ok_status();
}

}  // namespace

int run_chat(int argc, char** argv) {
  po::options_description options("options");
  options.add_options()("help,h", "show this help")(
      "config,c", po::value<std::string>()->required(), "TOML config file (see docs/config.md)")(
      "system", po::value<std::string>()->default_value(""), "a system message first")(
      "template", po::value<std::string>()->default_value(""),
      "chat template: a built-in name (chatml, llama3, gemma) or a Jinja file; default: the "
      "model's own (GGUF tokenizer.chat_template or tokenizer_config.json), else chatml")(
      "max-tokens,n", po::value<int64_t>(),
      "reply tokens per turn at most (default: decode.max_tokens)")(
      "set,s", po::value<std::vector<std::string>>()->composing(),
      "override a config key, e.g. --set sampling.temperature=0.7 (repeatable)")(
      "input,i", po::value<std::string>(),
      "read the user messages from this file, one per line, instead of standard input")(
      "stats", "after each reply, print on stderr the tokens fed, kept and generated");
  add_threads_option(options);
  po::variables_map values;
  int exit_code = 0;
  if (!parse_arguments(argc, argv, options, {}, "usage: tessera chat --config FILE [options]",
                       R"(examples:
  tessera chat --config configs/stories260k.toml --template chatml --system "You are terse." --stats
  printf 'Hello\nTell me more\n' | tessera chat --config configs/stories260k.toml --template chatml --max-tokens 32
  tessera chat --config configs/stories260k.toml --template chatml --input tests/cli/chat_turns.txt --stats

Each line you type is one user message (/exit or end of input ends the chat).
The conversation is rendered with the chat template; the model's K/V stay in
the cache across turns, so each turn feeds only the new text (the previous
reply's end-of-turn token and the new message), never the history again.
--stats shows it: "N tokens fed after M kept in the cache".
)",
                       values, exit_code))
    return exit_code;
  auto config = load_config(values["config"].as<std::string>(), config_overrides(values));
  if (!config.ok()) return report("chat", config.status());
  auto registry = make_registry(&*config);
  auto engine = Engine::create(*config, *registry);
  if (!engine.ok()) return report("chat", engine.status());
  std::vector<std::string> warnings = (*engine)->warnings();
  auto setup = chat_setup(**engine, values["template"].as<std::string>(), "--template",
                          values["system"].as<std::string>(), warnings);
  print_warnings("chat", warnings);
  if (!setup.ok()) return report("chat", setup.status());
  const int64_t max_tokens = values.count("max-tokens") ? values["max-tokens"].as<int64_t>()
                                                        : (*engine)->default_new_tokens();
  std::ifstream file;
  if (values.count("input")) {
    file.open(values["input"].as<std::string>());
    if (!file)
      return report("chat",
                    not_found("--input: cannot open '" + values["input"].as<std::string>() + "'"));
  }
  std::istream& input = values.count("input") ? static_cast<std::istream&>(file) : std::cin;
  const bool interactive = !values.count("input") && isatty(STDIN_FILENO) != 0;
  const Status status =
      converse(**engine, *setup, input, interactive, max_tokens, values.count("stats") > 0);
  if (!status.ok()) return report("chat", status);
  return 0;
}

}  // namespace tessera::cli
