// The Tokenizer facade: the added-token split, BOS/EOS, and the choice of
// implementation.
#include "core/tokenizer/tokenizer.h"

#include <algorithm>
#include <array>
#include <unordered_map>
#include <utility>

#include "core/tokenizer/bpe_tokenizer.h"
#include "core/tokenizer/spm_tokenizer.h"

namespace tessera {
namespace {

// Control tokens that end a turn in the families llama.cpp knows (its
// special_eog_ids): a model that emits one has finished its answer.
constexpr std::array<std::string_view, 9> kEndOfTurnTexts = {
    "<|eot_id|>", "<|im_end|>", "<|end|>",         "<end_of_turn>", "<|endoftext|>",
    "<|eom_id|>", "<EOT>",      "<|end_of_text|>", "<|return|>"};

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

// A byte trie of the added tokens' texts, for leftmost-longest matching.
struct Tokenizer::SpecialMatcher {
  struct Node {
    std::unordered_map<unsigned char, int32_t> next;
    int32_t token = -1;  // index into `tokens` of the token ending here
  };
  std::vector<Node> nodes{1};
  std::vector<AddedToken> tokens;
  std::array<bool, 256> can_start{};

  void add(const std::string& text, const AddedToken& token) {
    if (text.empty()) return;
    int32_t node = 0;
    for (char c : text) {
      const auto byte = static_cast<unsigned char>(c);
      auto it = nodes[static_cast<std::size_t>(node)].next.find(byte);
      if (it == nodes[static_cast<std::size_t>(node)].next.end()) {
        nodes.emplace_back();
        const auto child = static_cast<int32_t>(nodes.size() - 1);
        nodes[static_cast<std::size_t>(node)].next.emplace(byte, child);
        node = child;
      } else {
        node = it->second;
      }
    }
    Node& end = nodes[static_cast<std::size_t>(node)];
    if (end.token >= 0) return;  // the first token of a repeated text wins
    end.token = static_cast<int32_t>(tokens.size());
    tokens.push_back(token);
    can_start[static_cast<unsigned char>(text[0])] = true;
  }

  // The longest allowed token starting at text[pos]: (token index, length).
  std::pair<int32_t, std::size_t> match(std::string_view text, std::size_t pos,
                                        bool parse_special) const {
    std::pair<int32_t, std::size_t> best{-1, 0};
    int32_t node = 0;
    for (std::size_t i = pos; i < text.size(); ++i) {
      const auto& next = nodes[static_cast<std::size_t>(node)].next;
      const auto it = next.find(static_cast<unsigned char>(text[i]));
      if (it == next.end()) break;
      node = it->second;
      const int32_t t = nodes[static_cast<std::size_t>(node)].token;
      if (t >= 0 && (parse_special || !tokens[static_cast<std::size_t>(t)].special))
        best = {t, i + 1 - pos};
    }
    return best;
  }
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
    if (has_token(token.id))
      specials->add(vocab_->pieces[static_cast<std::size_t>(token.id)], token);
  }
  specials_ = std::move(specials);

  for (int32_t id : {vocab_->eos_id, vocab_->eot_id})
    if (has_token(id)) stop_tokens_.push_back(id);
  for (int32_t id = 0; id < vocab_->size(); ++id) {
    const auto index = static_cast<std::size_t>(id);
    if (index >= vocab_->types.size() || vocab_->types[index] != TokenType::kControl) continue;
    const std::string& piece = vocab_->pieces[index];
    if (std::find(kEndOfTurnTexts.begin(), kEndOfTurnTexts.end(), piece) != kEndOfTurnTexts.end())
      stop_tokens_.push_back(id);
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
  for (std::size_t pos = 0; pos < text.size();) {
    if (!specials_->can_start[static_cast<unsigned char>(text[pos])]) {
      ++pos;
      continue;
    }
    const auto [index, length] = specials_->match(text, pos, parse_special);
    if (index < 0) {
      ++pos;
      continue;
    }
    const AddedToken& token = specials_->tokens[static_cast<std::size_t>(index)];
    std::string_view before = text.substr(text_start, pos - text_start);
    if (strip_next) before = trim_start(before);
    if (token.lstrip) before = trim_end(before);
    if (!before.empty()) sections.push_back({before, -1});
    sections.push_back({{}, token.id});
    strip_next = token.rstrip;
    pos += length;
    text_start = pos;
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
