// Byte-pair tokenizer with rank-ordered merges: GGUF "gpt2" vocabularies
// (Llama 3, Qwen 2/3, GPT-2, DeepSeek, Falcon, StarCoder ...) and Hugging Face
// tokenizer.json BPE models (byte-level, or byte-fallback like Gemma 3).
// One implementation behind Tokenizer (core/tokenizer/tokenizer.h), which
// splits off added tokens and adds BOS/EOS around it.
//
// Encoding a fragment of plain text:
//   1. invalid UTF-8 becomes U+FFFD (llama.cpp's rule for GGUF vocabularies:
//      every bad byte its own; the WHATWG rule for tokenizer.json, as the
//      strings Hugging Face and transformers.js tokenize hold it);
//   2. the normalizers (NFC, Replace, Prepend), then the pre-tokenizers
//      (regex or string Split, ByteLevel, Metaspace) cut it into words;
//   3. each word is merged like llama.cpp's llm_tokenizer_bpe_session: its
//      characters are symbols, and the adjacent pair with the lowest merge
//      rank (ties: the leftmost) merges until no pair has a merge. With
//      ignore_merges, a word that is itself a token is emitted whole;
//   4. a symbol that is no token becomes its <0xHH> byte tokens (byte_fallback),
//      the unknown token (consecutive ones fused with fuse_unk), or, in a
//      byte-level vocabulary, the tokens of its byte characters.
//
// Decoding runs the decoders (ByteLevel, Replace, ByteFallback, Fuse, Strip,
// Metaspace) over the tokens' pieces, as transformers.js does: the ByteLevel
// decoder leaves added tokens' text as it is; control (and unknown) tokens
// print only when asked for.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/tokenizer/tokenizer.h"
#include "core/tokenizer/tokenizer_pipeline.h"

namespace tessera {

namespace unicode {
class SplitRegex;
}

class BpeTokenizer final : public TokenizerModel {
 public:
  // InvalidArgument for a vocabulary without a pipeline, a regex the engine
  // cannot compile, or merges that name no tokens.
  static Result<std::shared_ptr<const BpeTokenizer>> create(
      std::shared_ptr<const Vocabulary> vocab);
  ~BpeTokenizer() override;

  Status encode_text(std::string_view text, Fragment where,
                     std::vector<int32_t>& out) const override;
  std::string decode_token(int32_t previous, int32_t token, bool print_control) const override;
  std::string decode(std::span<const int32_t> tokens, bool print_control) const override;

  // Id of a vocabulary piece that encoding can produce (not control), or -1.
  int32_t find_piece(std::string_view piece) const;

  // The words step 2 cuts `text` into (for tests and `tessera tokenize`).
  std::vector<std::string> pre_tokenize(std::string_view text, Fragment where) const;

 private:
  explicit BpeTokenizer(std::shared_ptr<const Vocabulary> vocab);
  Status build();

  std::string normalize(std::string_view text) const;
  Status encode_word(std::string_view word, std::vector<int32_t>& out) const;
  // Appends what a symbol that is no token stands for (step 4).
  Status emit_unknown(std::string_view symbol, std::vector<int32_t>& out) const;
  struct DecodedPiece {
    std::string text;
    bool added = false;  // an added token's text: the ByteLevel decoder leaves it
  };
  // The piece `token` contributes to decoded text; false when it prints nothing.
  bool piece_for_decoding(int32_t token, bool print_control, DecodedPiece& piece) const;
  // Runs the decoders over the pieces of a sequence; at_start: it begins the text.
  std::string run_decoders(std::vector<DecodedPiece> pieces, bool at_start) const;

  struct PieceHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  struct Merge {
    int32_t rank;
    int32_t merged;
  };

  std::shared_ptr<const Vocabulary> vocab_;
  const TokenizerPipeline* pipeline_ = nullptr;  // owned by vocab_
  std::unordered_map<std::string, int32_t, PieceHash, std::equal_to<>> piece_to_id_;
  // (left id << 32 | right id) -> the merge of that pair.
  std::unordered_map<uint64_t, Merge> merges_;
  // One per pre-tokenizer step; null where the step is no regex split.
  std::vector<std::unique_ptr<const unicode::SplitRegex>> regexes_;
  std::unique_ptr<const unicode::SplitRegex> gpt2_regex_;  // ByteLevel use_regex
  std::array<int32_t, 256> byte_token_{};                  // <0xHH> tokens (byte_fallback)
  bool byte_level_ = false;
  bool whatwg_utf8_ = false;
};

}  // namespace tessera
