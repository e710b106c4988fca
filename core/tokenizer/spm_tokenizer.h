// SentencePiece-style BPE tokenizer (llama "SPM") over a Vocabulary, as llama
// and llama2.c models use it: text -> token ids, and ids -> text for printing.
// One implementation behind Tokenizer (core/tokenizer/tokenizer.h), which splits
// off added tokens and adds BOS first.
//
// Encoding: spaces become U+2581 ("▁"), a leading "▁" is added when the
// vocabulary says add_space_prefix and the text is non-empty, the text is split
// into UTF-8 characters, and adjacent symbols are merged greedily, always the
// pair whose concatenation is the highest-scoring vocabulary piece (ties: the
// leftmost pair). Symbols left that are not pieces fall back to their bytes
// (<0xHH> tokens), or to unk when the vocabulary lacks a byte token; a
// character with none of the three cannot be encoded (an error naming it).
// Only normal, user-defined and undefined pieces take part in matching: text
// never turns into control (<s>), byte, unknown or unused tokens by spelling them.
// Invalid UTF-8 is not an error: each stray byte is a symbol of its own.
//
// Decoding: "▁" prints as ' ', byte tokens as their raw byte (a multi-byte
// character may span several tokens), control tokens as nothing, the unknown
// token as " ⁇ " (SentencePiece's surface for it). When add_space_prefix is set,
// the leading space of a text piece directly after BOS is dropped, and decode()
// treats the start of the sequence as if it followed BOS, so
// decode(encode(text, b)) == text for any text the vocabulary can represent,
// except that a U+2581 in the text itself reads back as a space (SentencePiece
// does the same: the mark and a space are one symbol).
//
// Immutable after construction and safe to use from several threads at once.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/model/model.h"
#include "core/tokenizer/tokenizer.h"

namespace tessera {

class SpmTokenizer final : public TokenizerModel {
 public:
  explicit SpmTokenizer(std::shared_ptr<const Vocabulary> vocab);

  // The dummy space prefix goes before a fragment that is first (and no
  // continuation) or follows an added token, as llama.cpp does. A character
  // that has no piece, no byte-fallback tokens and no unknown token to stand
  // for it is InvalidArgument, naming the character and its byte offset.
  Status encode_text(std::string_view text, Fragment where,
                     std::vector<int32_t>& out) const override;
  std::string decode_token(int32_t previous, int32_t token, bool print_control) const override;
  std::string decode(std::span<const int32_t> tokens, bool print_control) const override;

  // Id of a piece that text can produce (normal/user-defined/undefined), or -1.
  int32_t find_piece(std::string_view piece) const;

 private:
  struct PieceHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };

  // Appends the tokens for one final symbol of the BPE merge: its piece id,
  // its bytes as byte tokens, or unk; false when none of them exists.
  bool emit_symbol(std::string_view symbol, std::vector<int32_t>& out) const;
  bool has_token(int32_t id) const { return id >= 0 && id < vocab_->size(); }
  // The error for a symbol (at `start` of the normalised text) that
  // emit_symbol could not encode, with its offset in the original `text`.
  // prefix_bytes: the dummy prefix at the start of the normalised text.
  Status unencodable(std::string_view text, std::string_view normalised, std::size_t prefix_bytes,
                     std::size_t start, std::size_t length) const;
  float score_of(int32_t id) const;

  std::shared_ptr<const Vocabulary> vocab_;
  // Pieces that text may turn into -> id (the first id when a piece repeats).
  std::unordered_map<std::string, int32_t, PieceHash, std::equal_to<>> piece_to_id_;
  // Byte value -> id of its <0xHH> token, or -1.
  std::array<int32_t, 256> byte_to_id_{};
};

}  // namespace tessera
