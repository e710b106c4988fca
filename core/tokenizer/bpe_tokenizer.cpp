// Byte-pair merging over vocabulary ids: a word's characters start as the ids
// of their one-character pieces, and a merge is looked up by the pair of ids
// (one hash probe, no string building), so a 150k-merge vocabulary loads in
// one pass and encodes at memory speed.
#include "core/tokenizer/bpe_tokenizer.h"

#include <queue>
#include <utility>

#include "core/tokenizer/byte_level.h"
#include "core/tokenizer/text_split.h"
#include "core/unicode/normalize.h"
#include "core/unicode/split_regex.h"
#include "core/unicode/utf8.h"

namespace tessera {
namespace {

constexpr const char* kGpt2Regex =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)";

std::size_t utf8_length(unsigned char lead) {
  if (lead < 0x80) return 1;
  if (lead >= 0xF0) return 4;
  if (lead >= 0xE0) return 3;
  if (lead >= 0xC0) return 2;
  return 1;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// The byte of a "<0xHH>" piece, or -1.
int byte_of_piece(std::string_view piece) {
  if (piece.size() != 6 || piece.substr(0, 3) != "<0x" || piece[5] != '>') return -1;
  const int hi = hex_value(piece[3]);
  const int lo = hex_value(piece[4]);
  return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

void replace_all(std::string& text, std::string_view from, std::string_view to) {
  if (from.empty()) return;
  std::string out;
  out.reserve(text.size());
  std::size_t pos = 0;
  for (std::size_t hit; (hit = text.find(from, pos)) != std::string::npos;
       pos = hit + from.size()) {
    out.append(text, pos, hit - pos);
    out += to;
  }
  out.append(text, pos, std::string::npos);
  text = std::move(out);
}

// Text with every invalid UTF-8 sequence as U+FFFD.
std::string valid_utf8(std::string_view text, bool whatwg) {
  bool ascii = true;
  for (char c : text) ascii = ascii && static_cast<unsigned char>(c) < 0x80;
  if (ascii) return std::string(text);
  std::vector<char32_t> cps;
  unicode::decode_utf8(text, cps, nullptr,
                       whatwg ? unicode::Utf8Errors::kWhatwg : unicode::Utf8Errors::kLlamaCpp);
  return unicode::to_utf8(cps.data(), cps.size());
}

struct Symbol {
  int32_t id;  // -1: a character that is no token
  int32_t prev;
  int32_t next;
  uint32_t start;  // bytes into the word
  uint32_t length;
};

struct Candidate {
  int32_t rank;
  int32_t left;
  int32_t right;
  int32_t left_id;
  int32_t right_id;
};

// Lowest rank first, then the leftmost pair.
struct CandidateOrder {
  bool operator()(const Candidate& a, const Candidate& b) const {
    if (a.rank != b.rank) return a.rank > b.rank;
    return a.left > b.left;
  }
};

uint64_t pair_key(int32_t left, int32_t right) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
}

}  // namespace

BpeTokenizer::BpeTokenizer(std::shared_ptr<const Vocabulary> vocab) : vocab_(std::move(vocab)) {}
BpeTokenizer::~BpeTokenizer() = default;

Result<std::shared_ptr<const BpeTokenizer>> BpeTokenizer::create(
    std::shared_ptr<const Vocabulary> vocab) {
  std::shared_ptr<BpeTokenizer> tokenizer(new BpeTokenizer(std::move(vocab)));
  RETURN_IF_ERROR(tokenizer->build());
  return std::shared_ptr<const BpeTokenizer>(std::move(tokenizer));
}

Status BpeTokenizer::build() {
  if (!vocab_->pipeline)
    return invalid_argument(
        "a byte-pair vocabulary needs its pre-tokenizer (GGUF tokenizer.ggml.pre, or a "
        "tokenizer.json pre_tokenizer); this one has none");
  pipeline_ = vocab_->pipeline.get();
  byte_level_ = pipeline_->byte_level();
  whatwg_utf8_ = pipeline_->whatwg_utf8;

  const int32_t n = vocab_->size();
  piece_to_id_.reserve(static_cast<std::size_t>(n));
  byte_token_.fill(-1);
  for (int32_t id = 0; id < n; ++id) {
    const auto index = static_cast<std::size_t>(id);
    const TokenType type = index < vocab_->types.size() ? vocab_->types[index] : TokenType::kNormal;
    const std::string& piece = vocab_->pieces[index];
    if (type == TokenType::kControl || piece.empty()) continue;
    piece_to_id_.emplace(piece, id);
    const int byte = byte_of_piece(piece);
    if (byte >= 0 && byte_token_[static_cast<std::size_t>(byte)] < 0)
      byte_token_[static_cast<std::size_t>(byte)] = id;
  }

  merges_.reserve(vocab_->merges.size());
  for (std::size_t rank = 0; rank < vocab_->merges.size(); ++rank) {
    const std::string& merge = vocab_->merges[rank];
    const std::size_t space = merge.find(' ', 1);
    if (space == std::string::npos)
      return invalid_argument("merge " + std::to_string(rank) + " '" + merge +
                              "' is not two pieces separated by a space");
    const std::string_view left(merge.data(), space);
    const std::string_view right(merge.data() + space + 1, merge.size() - space - 1);
    const int32_t l = find_piece(left);
    const int32_t r = find_piece(right);
    const int32_t merged = find_piece(merge.substr(0, space) + std::string(right));
    // A merge whose parts or result are no tokens can never apply to ids.
    if (l < 0 || r < 0 || merged < 0) continue;
    merges_.emplace(pair_key(l, r), Merge{static_cast<int32_t>(rank), merged});
  }

  for (std::size_t i = 0; i < pipeline_->pre_tokenizers.size(); ++i) {
    const PreTokenizerStep& step = pipeline_->pre_tokenizers[i];
    std::unique_ptr<const unicode::SplitRegex> regex;
    if (step.kind == PreTokenizerStep::Kind::kSplit && step.pattern_is_regex) {
      auto compiled = compile_split_regex(step.pattern);
      if (!compiled.ok())
        return compiled.status().with_context("pre-tokenizer " + std::to_string(i) + " regex");
      regex = std::move(compiled).value();
    }
    if (step.kind == PreTokenizerStep::Kind::kByteLevel && step.use_regex && !gpt2_regex_) {
      ASSIGN_OR_RETURN(gpt2_regex_, compile_split_regex(kGpt2Regex));
    }
    regexes_.push_back(std::move(regex));
  }
  return ok_status();
}

int32_t BpeTokenizer::find_piece(std::string_view piece) const {
  const auto it = piece_to_id_.find(piece);
  return it == piece_to_id_.end() ? -1 : it->second;
}

std::string BpeTokenizer::normalize(std::string_view text) const {
  std::string out(text);
  for (const NormalizerStep& step : pipeline_->normalizers) {
    switch (step.kind) {
      case NormalizerStep::Kind::kNfc:
        out = unicode::nfc(out);
        break;
      case NormalizerStep::Kind::kReplace:
        replace_all(out, step.pattern, step.content);
        break;
      case NormalizerStep::Kind::kPrepend:
        if (!out.empty()) out = step.content + out;
        break;
    }
  }
  return out;
}

std::vector<std::string> BpeTokenizer::pre_tokenize(std::string_view text, Fragment where) const {
  std::vector<std::string> words{normalize(valid_utf8(text, whatwg_utf8_))};
  std::vector<std::string> next;
  for (std::size_t i = 0; i < pipeline_->pre_tokenizers.size(); ++i) {
    const PreTokenizerStep& step = pipeline_->pre_tokenizers[i];
    next.clear();
    for (std::string& word : words) {
      switch (step.kind) {
        case PreTokenizerStep::Kind::kSplit:
          if (regexes_[i])
            split_by_regex(*regexes_[i], word, step.behavior, step.invert, next);
          else
            split_by_string(step.pattern, word, step.behavior, step.invert, next);
          break;
        case PreTokenizerStep::Kind::kByteLevel: {
          if (step.add_prefix_space && !word.empty() && word.front() != ' ') word.insert(0, " ");
          std::vector<std::string> parts;
          if (gpt2_regex_ && step.use_regex)
            split_by_regex(*gpt2_regex_, word, SplitBehavior::kIsolated, false, parts);
          else
            parts.push_back(std::move(word));
          for (const std::string& part : parts) {
            std::string encoded;
            encoded.reserve(part.size() * 2);
            append_byte_level(part, encoded);
            next.push_back(std::move(encoded));
          }
          break;
        }
        case PreTokenizerStep::Kind::kMetaspace: {
          replace_all(word, " ", step.replacement);
          const bool prepend =
              step.prepend_scheme == "always" || (step.prepend_scheme == "first" && where.first);
          if (prepend && word.rfind(step.replacement, 0) != 0) word.insert(0, step.replacement);
          if (step.split)
            split_by_string(step.replacement, word, SplitBehavior::kMergedWithNext, false, next);
          else
            next.push_back(std::move(word));
          break;
        }
      }
    }
    words.swap(next);
  }
  std::erase_if(words, [](const std::string& w) { return w.empty(); });
  return words;
}

Status BpeTokenizer::encode_text(std::string_view text, Fragment where,
                                 std::vector<int32_t>& out) const {
  for (const std::string& word : pre_tokenize(text, where)) RETURN_IF_ERROR(encode_word(word, out));
  return ok_status();
}

Status BpeTokenizer::encode_word(std::string_view word, std::vector<int32_t>& out) const {
  if (vocab_->ignore_merges) {
    if (const int32_t whole = find_piece(word); whole >= 0) {
      out.push_back(whole);
      return ok_status();
    }
  }
  std::vector<Symbol> symbols;
  symbols.reserve(word.size());
  for (std::size_t pos = 0; pos < word.size();) {
    const std::size_t length =
        std::min(word.size() - pos, utf8_length(static_cast<unsigned char>(word[pos])));
    const auto index = static_cast<int32_t>(symbols.size());
    symbols.push_back({find_piece(word.substr(pos, length)), index - 1, index + 1,
                       static_cast<uint32_t>(pos), static_cast<uint32_t>(length)});
    pos += length;
  }
  if (symbols.empty()) return ok_status();
  symbols.back().next = -1;

  std::priority_queue<Candidate, std::vector<Candidate>, CandidateOrder> queue;
  auto try_add = [&](int32_t left, int32_t right) {
    if (left < 0 || right < 0) return;
    const int32_t l = symbols[static_cast<std::size_t>(left)].id;
    const int32_t r = symbols[static_cast<std::size_t>(right)].id;
    if (l < 0 || r < 0) return;
    const auto it = merges_.find(pair_key(l, r));
    if (it != merges_.end()) queue.push({it->second.rank, left, right, l, r});
  };
  for (std::size_t i = 1; i < symbols.size(); ++i)
    try_add(static_cast<int32_t>(i - 1), static_cast<int32_t>(i));

  while (!queue.empty()) {
    const Candidate c = queue.top();
    queue.pop();
    Symbol& left = symbols[static_cast<std::size_t>(c.left)];
    Symbol& right = symbols[static_cast<std::size_t>(c.right)];
    // Stale: one side merged since (its id changed or it is gone).
    if (left.length == 0 || right.length == 0 || left.next != c.right || left.id != c.left_id ||
        right.id != c.right_id)
      continue;
    left.id = merges_.at(pair_key(c.left_id, c.right_id)).merged;
    left.length += right.length;
    right.length = 0;
    left.next = right.next;
    if (right.next >= 0) symbols[static_cast<std::size_t>(right.next)].prev = c.left;
    try_add(left.prev, c.left);
    try_add(c.left, left.next);
  }

  for (int32_t i = 0; i >= 0; i = symbols[static_cast<std::size_t>(i)].next) {
    const Symbol& s = symbols[static_cast<std::size_t>(i)];
    if (s.id >= 0)
      out.push_back(s.id);
    else
      RETURN_IF_ERROR(emit_unknown(word.substr(s.start, s.length), out));
  }
  return ok_status();
}

Status BpeTokenizer::emit_unknown(std::string_view symbol, std::vector<int32_t>& out) const {
  if (vocab_->byte_fallback) {
    bool all = true;
    for (char c : symbol) all = all && byte_token_[static_cast<unsigned char>(c)] >= 0;
    if (all) {
      for (char c : symbol) out.push_back(byte_token_[static_cast<unsigned char>(c)]);
      return ok_status();
    }
  }
  const int32_t unk = vocab_->unk_id;
  if (unk >= 0 && unk < vocab_->size()) {
    if (!(vocab_->fuse_unk && !out.empty() && out.back() == unk)) out.push_back(unk);
    return ok_status();
  }
  if (byte_level_) {
    // llama.cpp: each byte character's own token, where there is one.
    for (std::size_t pos = 0; pos < symbol.size();) {
      const std::size_t length =
          std::min(symbol.size() - pos, utf8_length(static_cast<unsigned char>(symbol[pos])));
      if (const int32_t id = find_piece(symbol.substr(pos, length)); id >= 0) out.push_back(id);
      pos += length;
    }
    return ok_status();
  }
  return invalid_argument("the text cannot be tokenized: '" + std::string(symbol) +
                          "' has no token in this vocabulary, which has no byte-fallback tokens "
                          "and no unknown token; remove or replace that character");
}

std::string BpeTokenizer::run_decoders(std::vector<DecodedPiece> pieces, bool at_start) const {
  bool fused = false;
  for (const DecoderStep& step : pipeline_->decoders) {
    switch (step.kind) {
      case DecoderStep::Kind::kByteLevel:
        // Added tokens are text already (transformers.js keeps them too).
        for (DecodedPiece& p : pieces)
          if (!p.added) p.text = bytes_of_byte_level(p.text);
        break;
      case DecoderStep::Kind::kReplace:
        for (DecodedPiece& p : pieces) replace_all(p.text, step.pattern, step.content);
        break;
      case DecoderStep::Kind::kByteFallback:
        for (DecodedPiece& p : pieces)
          if (const int byte = byte_of_piece(p.text); byte >= 0)
            p.text = std::string(1, static_cast<char>(byte));
        break;
      case DecoderStep::Kind::kFuse: {
        DecodedPiece all{"", false};
        for (const DecodedPiece& p : pieces) all.text += p.text;
        pieces = {std::move(all)};
        fused = true;
        break;
      }
      case DecoderStep::Kind::kStrip:
        // After Fuse the piece is the whole text: only its start is stripped.
        if (fused && !at_start) break;
        for (DecodedPiece& piece : pieces) {
          std::string& p = piece.text;
          for (int k = 0; k < step.start && p.rfind(step.content, 0) == 0; ++k)
            p.erase(0, step.content.size());
          for (int k = 0;
               k < step.stop && p.size() >= step.content.size() &&
               p.compare(p.size() - step.content.size(), step.content.size(), step.content) == 0;
               ++k)
            p.erase(p.size() - step.content.size());
        }
        break;
      case DecoderStep::Kind::kMetaspace:
        for (std::size_t i = 0; i < pieces.size(); ++i) {
          std::string& p = pieces[i].text;
          replace_all(p, step.replacement, " ");
          if (i == 0 && at_start && step.prepend && !p.empty() && p[0] == ' ') p.erase(0, 1);
        }
        break;
    }
  }
  std::string out;
  for (const DecodedPiece& p : pieces) out += p.text;
  return out;
}

bool BpeTokenizer::piece_for_decoding(int32_t token, bool print_control,
                                      DecodedPiece& piece) const {
  if (token < 0 || token >= vocab_->size()) return false;
  const auto index = static_cast<std::size_t>(token);
  const TokenType type = index < vocab_->types.size() ? vocab_->types[index] : TokenType::kNormal;
  const bool special = type == TokenType::kControl || type == TokenType::kUnknown;
  if (special && !print_control) return false;
  piece.text = vocab_->pieces[index];
  piece.added = special || type == TokenType::kUserDefined;
  return true;
}

std::string BpeTokenizer::decode_token(int32_t previous, int32_t token, bool print_control) const {
  DecodedPiece piece;
  if (!piece_for_decoding(token, print_control, piece)) return {};
  return run_decoders({std::move(piece)}, previous < 0 || previous == vocab_->bos_id);
}

std::string BpeTokenizer::decode(std::span<const int32_t> tokens, bool print_control) const {
  std::vector<DecodedPiece> pieces;
  pieces.reserve(tokens.size());
  for (int32_t token : tokens) {
    DecodedPiece piece;
    if (piece_for_decoding(token, print_control, piece)) pieces.push_back(std::move(piece));
  }
  return run_decoders(std::move(pieces), /*at_start=*/true);
}

}  // namespace tessera
