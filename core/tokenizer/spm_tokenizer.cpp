// SentencePiece BPE encoding: symbols in a doubly linked list (merging two is
// O(1)) and a max-heap of candidate merges keyed by the merged piece's score.
// Merges invalidate neighbouring candidates lazily: a popped candidate is used
// only if its two symbols are still adjacent and unchanged.
#include "core/tokenizer/spm_tokenizer.h"

#include <queue>
#include <utility>

namespace tessera {
namespace {

constexpr std::string_view kSpaceMark = "\xe2\x96\x81";  // U+2581
constexpr std::string_view kUnknownSurface =
    " \xe2\x81\x87 ";  // " ⁇ ", as SentencePiece prints unk

bool is_text_type(TokenType type) {
  return type == TokenType::kNormal || type == TokenType::kUserDefined ||
         type == TokenType::kUndefined;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// The byte of a "<0xHH>" piece, or -1.
int byte_piece_value(std::string_view piece) {
  if (piece.size() != 6 || piece.substr(0, 3) != "<0x" || piece[5] != '>') return -1;
  const int hi = hex_value(piece[3]);
  const int lo = hex_value(piece[4]);
  if (hi < 0 || lo < 0) return -1;
  return hi * 16 + lo;
}

std::string hex_byte(unsigned char byte) {
  static constexpr char kDigits[] = "0123456789ABCDEF";
  return std::string("0x") + kDigits[byte >> 4] + kDigits[byte & 15];
}

// "U+00E9" for a well-formed UTF-8 character of 1-4 bytes.
std::string code_point_text(std::string_view ch) {
  const auto b = [&](std::size_t i) {
    return static_cast<uint32_t>(static_cast<unsigned char>(ch[i]));
  };
  uint32_t cp = b(0);
  if (ch.size() == 2) cp = ((b(0) & 0x1F) << 6) | (b(1) & 0x3F);
  if (ch.size() == 3) cp = ((b(0) & 0x0F) << 12) | ((b(1) & 0x3F) << 6) | (b(2) & 0x3F);
  if (ch.size() == 4)
    cp = ((b(0) & 0x07) << 18) | ((b(1) & 0x3F) << 12) | ((b(2) & 0x3F) << 6) | (b(3) & 0x3F);
  static constexpr char kDigits[] = "0123456789ABCDEF";
  std::string hex;
  for (int shift = cp > 0xFFFF ? 20 : 12; shift >= 0; shift -= 4)
    hex += kDigits[(cp >> shift) & 15];
  return "U+" + hex;
}

// Length of the UTF-8 character starting at text[pos]: 1-4 for a well-formed
// sequence, 1 for a stray or truncated byte (it then becomes a symbol alone).
std::size_t utf8_char_length(std::string_view text, std::size_t pos) {
  const auto lead = static_cast<unsigned char>(text[pos]);
  std::size_t length = 1;
  if (lead >= 0xC2 && lead <= 0xDF)
    length = 2;
  else if (lead >= 0xE0 && lead <= 0xEF)
    length = 3;
  else if (lead >= 0xF0 && lead <= 0xF4)
    length = 4;
  if (pos + length > text.size()) return 1;
  for (std::size_t i = 1; i < length; ++i) {
    if ((static_cast<unsigned char>(text[pos + i]) & 0xC0) != 0x80) return 1;
  }
  return length;
}

struct Symbol {
  int32_t prev;
  int32_t next;
  std::size_t start;   // byte offset into the normalised text
  std::size_t length;  // bytes; 0 once merged into its left neighbour
};

struct Candidate {
  float score;
  int32_t left;  // symbol index; the right one is symbols[left].next when pushed
  int32_t right;
  std::size_t merged_length;  // left.length + right.length when pushed, to detect staleness
};

// Max-heap order: higher score first, then the leftmost pair.
struct CandidateOrder {
  bool operator()(const Candidate& a, const Candidate& b) const {
    if (a.score != b.score) return a.score < b.score;
    return a.left > b.left;
  }
};

}  // namespace

SpmTokenizer::SpmTokenizer(std::shared_ptr<const Vocabulary> vocab) : vocab_(std::move(vocab)) {
  byte_to_id_.fill(-1);
  const int32_t n = vocab_->size();
  piece_to_id_.reserve(static_cast<std::size_t>(n));
  for (int32_t id = 0; id < n; ++id) {
    const auto index = static_cast<std::size_t>(id);
    const TokenType type = index < vocab_->types.size() ? vocab_->types[index] : TokenType::kNormal;
    const std::string& piece = vocab_->pieces[index];
    if (type == TokenType::kByte) {
      const int value = byte_piece_value(piece);
      if (value >= 0 && byte_to_id_[static_cast<std::size_t>(value)] < 0)
        byte_to_id_[static_cast<std::size_t>(value)] = id;
    } else if (is_text_type(type) && !piece.empty()) {
      piece_to_id_.emplace(piece, id);  // keeps the first id of a repeated piece
    }
  }
}

int32_t SpmTokenizer::find_piece(std::string_view piece) const {
  const auto it = piece_to_id_.find(piece);
  return it == piece_to_id_.end() ? -1 : it->second;
}

float SpmTokenizer::score_of(int32_t id) const {
  const auto index = static_cast<std::size_t>(id);
  return index < vocab_->scores.size() ? vocab_->scores[index] : 0.0f;
}

bool SpmTokenizer::emit_symbol(std::string_view symbol, std::vector<int32_t>& out) const {
  const int32_t id = find_piece(symbol);
  if (id >= 0) {
    out.push_back(id);
    return true;
  }
  bool all_bytes = true;
  for (char c : symbol) all_bytes = all_bytes && byte_to_id_[static_cast<unsigned char>(c)] >= 0;
  if (!all_bytes) {
    if (!has_token(vocab_->unk_id)) return false;
    out.push_back(vocab_->unk_id);  // no byte fallback in this vocabulary: one unk per character
    return true;
  }
  for (char c : symbol) out.push_back(byte_to_id_[static_cast<unsigned char>(c)]);
  return true;
}

Status SpmTokenizer::encode_text(std::string_view text, Fragment where,
                                 std::vector<int32_t>& tokens) const {
  if (text.empty()) return ok_status();

  // Normalise: dummy prefix and spaces as "▁".
  std::string normalised;
  normalised.reserve(text.size() + kSpaceMark.size() * 4);
  const bool prefixed = vocab_->add_space_prefix && (where.first || where.after_token);
  if (prefixed) normalised += kSpaceMark;
  for (char c : text) {
    if (c == ' ')
      normalised += kSpaceMark;
    else
      normalised += c;
  }
  const std::string_view norm(normalised);

  std::vector<Symbol> symbols;
  symbols.reserve(norm.size());
  for (std::size_t pos = 0; pos < norm.size();) {
    const std::size_t length = utf8_char_length(norm, pos);
    const auto index = static_cast<int32_t>(symbols.size());
    symbols.push_back({index - 1, index + 1, pos, length});
    pos += length;
  }
  symbols.back().next = -1;

  std::priority_queue<Candidate, std::vector<Candidate>, CandidateOrder> queue;
  auto try_add = [&](int32_t left, int32_t right) {
    if (left < 0 || right < 0) return;
    const Symbol& l = symbols[static_cast<std::size_t>(left)];
    const Symbol& r = symbols[static_cast<std::size_t>(right)];
    const std::size_t merged_length = l.length + r.length;
    const int32_t id = find_piece(norm.substr(l.start, merged_length));
    if (id < 0) return;
    queue.push({score_of(id), left, right, merged_length});
  };
  for (std::size_t i = 1; i < symbols.size(); ++i)
    try_add(static_cast<int32_t>(i - 1), static_cast<int32_t>(i));

  while (!queue.empty()) {
    const Candidate candidate = queue.top();
    queue.pop();
    Symbol& left = symbols[static_cast<std::size_t>(candidate.left)];
    if (left.length == 0 || left.next != candidate.right) continue;
    Symbol& right = symbols[static_cast<std::size_t>(candidate.right)];
    if (left.length + right.length != candidate.merged_length) continue;

    // Merge right into left and unlink right.
    left.length += right.length;
    right.length = 0;
    left.next = right.next;
    if (right.next >= 0) symbols[static_cast<std::size_t>(right.next)].prev = candidate.left;

    try_add(left.prev, candidate.left);
    try_add(candidate.left, left.next);
  }

  for (int32_t i = 0; i >= 0; i = symbols[static_cast<std::size_t>(i)].next) {
    const Symbol& symbol = symbols[static_cast<std::size_t>(i)];
    if (!emit_symbol(norm.substr(symbol.start, symbol.length), tokens))
      return unencodable(text, norm, prefixed ? kSpaceMark.size() : 0, symbol.start, symbol.length);
  }
  return ok_status();
}

Status SpmTokenizer::unencodable(std::string_view text, std::string_view norm,
                                 std::size_t prefix_bytes, std::size_t start,
                                 std::size_t length) const {
  // Map the offset in the normalised text back to `text`: the dummy prefix
  // and every space became the three bytes of U+2581.
  std::size_t norm_pos = prefix_bytes;
  std::size_t offset = 0;
  while (offset < text.size() && norm_pos < start) {
    norm_pos += text[offset] == ' ' ? kSpaceMark.size() : 1;
    ++offset;
  }
  const std::string_view symbol = norm.substr(start, length);
  std::string shown;
  const auto first = static_cast<unsigned char>(symbol[0]);
  if (length == 1 && first >= 0x80) {
    shown = "the byte " + hex_byte(first) + " (not valid UTF-8)";
  } else if (length == 1 && (first < 0x20 || first == 0x7F)) {
    shown = "the control character " + code_point_text(symbol);
  } else {
    shown = "the character '" + std::string(symbol) + "' (" + code_point_text(symbol) + ")";
  }
  return invalid_argument("the text cannot be tokenized: " + shown + " at byte " +
                          std::to_string(offset) +
                          " has no token in this model's vocabulary, which has no byte-fallback "
                          "token for it and no unknown token (unknown_token_id is unset); "
                          "remove or replace that character");
}

std::string SpmTokenizer::decode_token(int32_t previous, int32_t token, bool print_control) const {
  if (token < 0 || token >= vocab_->size()) return {};
  const auto index = static_cast<std::size_t>(token);
  const TokenType type = index < vocab_->types.size() ? vocab_->types[index] : TokenType::kNormal;
  const std::string& piece = vocab_->pieces[index];
  switch (type) {
    case TokenType::kControl:
      if (!print_control) return {};
      return piece;
    case TokenType::kUnknown:
      return std::string(kUnknownSurface);
    case TokenType::kByte: {
      const int value = byte_piece_value(piece);
      if (value >= 0) return std::string(1, static_cast<char>(value));
      break;  // a mislabelled piece: print it as text
    }
    default:
      break;
  }
  std::string out;
  out.reserve(piece.size());
  for (std::size_t pos = 0; pos < piece.size();) {
    if (std::string_view(piece).substr(pos, kSpaceMark.size()) == kSpaceMark) {
      out += ' ';
      pos += kSpaceMark.size();
    } else {
      out += piece[pos++];
    }
  }
  // The encoder added this space (dummy prefix); SentencePiece removes it again.
  if (vocab_->add_space_prefix && previous == vocab_->bos_id && !out.empty() && out.front() == ' ')
    out.erase(0, 1);
  return out;
}

std::string SpmTokenizer::decode(std::span<const int32_t> tokens, bool print_control) const {
  std::string out;
  int32_t previous = vocab_->bos_id;  // the start of a sequence reads like the spot after BOS
  for (int32_t token : tokens) {
    out += decode_token(previous, token, print_control);
    previous = token;
  }
  return out;
}

}  // namespace tessera
