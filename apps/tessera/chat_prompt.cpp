#include "apps/tessera/chat_prompt.h"

#include <filesystem>

#include "core/io/text_file.h"
#include "core/util/strings.h"
#include "core/util/suggest.h"

namespace tessera::cli {
namespace {

std::string token_text(const Vocabulary& vocab, int32_t id) {
  return id >= 0 && id < vocab.size() ? vocab.pieces[static_cast<std::size_t>(id)] : "";
}

// The template's source and where it came from.
Result<std::pair<std::string, std::string>> template_source(const Engine& engine,
                                                            const std::string& choice,
                                                            std::string_view option,
                                                            std::vector<std::string>& warnings) {
  if (!choice.empty()) {
    if (auto builtin = chat::builtin_template(choice); builtin.ok())
      return std::pair{std::string(*builtin), "built-in template '" + choice + "'"};
    std::error_code error;
    if (!std::filesystem::exists(choice, error)) {
      std::vector<std::string> names;
      for (const auto name : chat::builtin_template_names()) names.emplace_back(name);
      return not_found(std::string(option) + ": chat template '" + choice +
                       "' is neither a file nor a built-in template" +
                       did_you_mean_then(choice, names) + "built-in: " + join(names));
    }
    ASSIGN_OR_RETURN(std::string source, read_text_file(choice, "chat template", 1 << 20));
    return std::pair{std::move(source), choice};
  }
  const std::string& own = engine.tokenizer().vocabulary().chat_template;
  if (!own.empty()) return std::pair{own, engine.model().path + ": tokenizer.chat_template"};
  warnings.push_back(engine.model().path +
                     " has no chat template (tokenizer.chat_template); using the built-in "
                     "'chatml' (choose another with --template NAME|FILE)");
  ASSIGN_OR_RETURN(const std::string_view chatml, chat::builtin_template("chatml"));
  return std::pair{std::string(chatml), std::string("built-in template 'chatml'")};
}

}  // namespace

Result<ChatSetup> chat_setup(const Engine& engine, const std::string& choice,
                             std::string_view option, const std::string& system,
                             std::vector<std::string>& warnings) {
  ChatSetup setup;
  ASSIGN_OR_RETURN(auto source, template_source(engine, choice, option, warnings));
  setup.origin = source.second;
  ASSIGN_OR_RETURN(chat::ChatTemplate parsed,
                   chat::ChatTemplate::parse(source.first, source.second));
  setup.chat_template = std::make_unique<chat::ChatTemplate>(std::move(parsed));
  const Vocabulary& vocab = engine.tokenizer().vocabulary();
  setup.request.bos_token = token_text(vocab, vocab.bos_id);
  setup.request.eos_token = token_text(vocab, vocab.eos_id);
  if (!system.empty()) setup.request.messages.push_back({"system", system});
  return setup;
}

Result<std::vector<int32_t>> encode_chat_text(const Tokenizer& tokenizer, const std::string& text,
                                              bool sequence_start) {
  EncodeOptions options;
  options.parse_special = true;
  options.continuation = !sequence_start;
  const std::string bos = token_text(tokenizer.vocabulary(), tokenizer.bos());
  options.add_special = sequence_start && !(tokenizer.adds_bos() && !bos.empty() &&
                                            text.compare(0, bos.size(), bos) == 0);
  return tokenizer.encode(text, options);
}

}  // namespace tessera::cli
