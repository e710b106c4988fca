// The Tokenizer facade: the added-token split, BOS/EOS, and the choice of
// implementation.
#include "core/tokenizer/tokenizer.h"

#include <algorithm>
#include <utility>

#include "core/tokenizer/added_token_matcher.h"
#include "core/tokenizer/bpe_tokenizer.h"
#include "core/tokenizer/llama_cpp_token_rules.h"
#include "core/tokenizer/spm_tokenizer.h"

namespace tessera {
namespace {

bool is_ascii_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

std::string_view trim_end(std::string_view s) {
  while (!s.empty() && is_ascii_space(s.back())) s.remove_suffix(1);
  return s;
}

std::string_view trim_start(std::string_view s) {
  while (!s.empty() && is_ascii_space(s.front())) s.remove_prefix(1);
  return s;
}

// The added tokens of a vocabulary: tokenizer.json's list, or (GGUF, llama2.c)
// the control, unknown and user-defined tokens.
std::vector<AddedToken> added_tokens_of(const Vocabulary& vocab) {
  if (!vocab.added_tokens.empty()) return vocab.added_tokens;
  std::vector<AddedToken> out;
  for (int32_t id = 0; id < vocab.size(); ++id) {
    const auto index = static_cast<std::size_t>(id);
    const TokenType type = index < vocab.types.size() ? vocab.types[index] : TokenType::kNormal;
    if (type != TokenType::kControl && type != TokenType::kUserDefined &&
        type != TokenType::kUnknown)
      continue;
    AddedToken token;
    token.id = id;
    token.special = type != TokenType::kUserDefined;
    out.push_back(token);
  }
  return out;
}

}  // namespace

// The added tokens and the automaton that finds them (ids index `tokens`).
struct Tokenizer::SpecialMatcher {
  AddedTokenMatcher matcher;
  std::vector<AddedToken> tokens;
};

Tokenizer::Tokenizer(Vocabulary vocab)
    : vocab_(std::make_shared<const Vocabulary>(std::move(vocab))) {
  if (vocab_->kind == VocabularyKind::kBytePairs) {
    auto model = BpeTokenizer::create(vocab_);
    if (model.ok())
      model_ = std::move(model).value();
    else
      build_status_ = model.status();
  } else {
    model_ = std::make_shared<const SpmTokenizer>(vocab_);
  }

  auto specials = std::make_shared<SpecialMatcher>();
  for (const AddedToken& token : added_tokens_of(*vocab_)) {
    if (!has_token(token.id)) continue;
    specials->matcher.add(vocab_->pieces[static_cast<std::size_t>(token.id)],
                          static_cast<int32_t>(specials->tokens.size()), token.special);
    specials->tokens.push_back(token);
  }
  specials->matcher.build();
  specials_ = std::move(specials);

  for (int32_t id : {vocab_->eos_id, vocab_->eot_id})
    if (has_token(id)) stop_tokens_.push_back(id);
  for (int32_t id = 0; id < vocab_->size(); ++id) {
    const auto index = static_cast<std::size_t>(id);
    if (index >= vocab_->types.size() || vocab_->types[index] != TokenType::kControl) continue;
    const std::string& piece = vocab_->pieces[index];
    // The control tokens llama.cpp counts as end of generation.
    const auto texts = end_of_generation_texts();
    if (std::find(texts.begin(), texts.end(), piece) != texts.end()) stop_tokens_.push_back(id);
  }
  std::sort(stop_tokens_.begin(), stop_tokens_.end());
  stop_tokens_.erase(std::unique(stop_tokens_.begin(), stop_tokens_.end()), stop_tokens_.end());
}

Result<Tokenizer> make_tokenizer(Vocabulary vocab) {
  Tokenizer tokenizer(std::move(vocab));
  RETURN_IF_ERROR(tokenizer.encode("", EncodeOptions{.add_special = false}).status());
  return tokenizer;
}

bool Tokenizer::is_end_of_generation(int32_t token) const {
  return std::binary_search(stop_tokens_.begin(), stop_tokens_.end(), token);
}

int32_t Tokenizer::find_piece(std::string_view piece) const {
  if (const auto* spm = dynamic_cast<const SpmTokenizer*>(model_.get()))
    return spm->find_piece(piece);
  if (const auto* bpe = dynamic_cast<const BpeTokenizer*>(model_.get()))
    return bpe->find_piece(piece);
  return -1;
}

std::vector<Tokenizer::Section> Tokenizer::partition(std::string_view text,
                                                     bool parse_special) const {
  std::vector<Section> sections;
  std::size_t text_start = 0;
  bool strip_next = false;  // the previous token swallows the whitespace after it
  auto flush_text = [&](std::size_t end) {
    std::string_view plain = text.substr(text_start, end - text_start);
    if (strip_next) plain = trim_start(plain);
    if (!plain.empty()) sections.push_back({plain, -1});
  };
  for (const AddedTokenMatcher::Match& match : specials_->matcher.find(text, parse_special)) {
    const AddedToken& token = specials_->tokens[static_cast<std::size_t>(match.id)];
    std::string_view before = text.substr(text_start, match.begin - text_start);
    if (strip_next) before = trim_start(before);
    if (token.lstrip) before = trim_end(before);
    if (!before.empty()) sections.push_back({before, -1});
    sections.push_back({{}, token.id});
    strip_next = token.rstrip;
    text_start = match.begin + match.length;
  }
  flush_text(text.size());
  return sections;
}

Result<std::vector<int32_t>> Tokenizer::encode(std::string_view text,
                                               const EncodeOptions& options) const {
  RETURN_IF_ERROR(build_status_);
  std::vector<int32_t> tokens;
  if (options.add_special && adds_bos()) tokens.push_back(vocab_->bos_id);
  bool first = !options.continuation;
  bool after_token = false;
  for (const Section& section : partition(text, options.parse_special)) {
    if (section.token >= 0) {
      tokens.push_back(section.token);
      after_token = true;
    } else {
      RETURN_IF_ERROR(model_->encode_text(section.text, {first, after_token}, tokens));
      after_token = false;
    }
    first = false;
  }
  if (options.add_special && vocab_->add_eos && has_token(vocab_->eos_id))
    tokens.push_back(vocab_->eos_id);
  return tokens;
}

Result<std::vector<int32_t>> Tokenizer::encode(std::string_view text, bool add_bos,
                                               bool continuation) const {
  return encode(text, EncodeOptions{.add_special = add_bos, .continuation = continuation});
}

std::string Tokenizer::decode_token(int32_t previous, int32_t token, bool print_control) const {
  if (!model_) return {};
  return model_->decode_token(previous, token, print_control);
}

std::string Tokenizer::decode(std::span<const int32_t> tokens, bool print_control) const {
  if (!model_) return {};
  return model_->decode(tokens, print_control);
}

}  // namespace tessera
