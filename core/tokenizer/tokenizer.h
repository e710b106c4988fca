// Text <-> token ids for a Vocabulary. Two implementations sit behind one
// Tokenizer, chosen by the vocabulary's kind:
//   - SentencePiece BPE ("llama" in GGUF; llama and llama2.c models):
//     core/tokenizer/spm_tokenizer.h;
//   - byte-pair BPE ("gpt2" in GGUF, and Hugging Face tokenizer.json: Llama 3,
//     Qwen 2/3, Gemma 3, GPT-2 and the llama.cpp test vocabularies):
//     core/tokenizer/bpe_tokenizer.h.
//
// Before either sees the text, it is split on the vocabulary's added tokens
// (llama.cpp's tokenizer_st_partition, Hugging Face added_tokens): user-defined
// tokens always, control tokens (<|im_start|>, <|eot_id|>, <bos> ...) only when
// the caller sets parse_special. Raw user text thus never turns into control
// tokens; a chat template's output does, when encoded with parse_special.
// Matching is leftmost-longest.
//
// A Tokenizer is immutable after construction and safe to use from several
// threads at once; copies share the implementation.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/model/model.h"

namespace tessera {

struct EncodeOptions {
  // Start a sequence: BOS (and EOS at the end) where the vocabulary asks for
  // them (add_bos / add_eos: tokenizer.ggml.add_bos_token, tokenizer.json's
  // post_processor).
  bool add_special = true;
  // Text that spells a control token becomes that token.
  bool parse_special = false;
  // The text continues earlier text (a branch after a prompt): no dummy space
  // prefix (SentencePiece, Metaspace) is added before it.
  bool continuation = false;
};

// What one implementation does; Tokenizer adds the special-token split, BOS
// and EOS around it.
class TokenizerModel {
 public:
  virtual ~TokenizerModel() = default;
  // Where a fragment of plain text sits in the whole text.
  struct Fragment {
    bool first = true;         // nothing precedes it (and it is no continuation)
    bool after_token = false;  // an added token precedes it
  };
  // Appends the ids of one fragment of plain text.
  virtual Status encode_text(std::string_view text, Fragment where,
                             std::vector<int32_t>& out) const = 0;
  // The text of `token` right after `previous` (-1 or BOS at the start).
  virtual std::string decode_token(int32_t previous, int32_t token, bool print_control) const = 0;
  // The text of a whole sequence.
  virtual std::string decode(std::span<const int32_t> tokens, bool print_control) const = 0;
};

class Tokenizer {
 public:
  // Takes the vocabulary as is; ids outside [0, size) in bos/eos/unk mean the
  // vocabulary has no such token (GGUF writes -1 or 0xffffffff for "none").
  // A vocabulary the implementation refuses (see make_tokenizer) gives a
  // Tokenizer whose encode returns that error.
  explicit Tokenizer(Vocabulary vocab);

  // Token ids of `text`. Every id returned is inside the vocabulary: text
  // that cannot be represented (no piece, no byte fallback, no unknown token)
  // is InvalidArgument naming the character and its byte offset.
  Result<std::vector<int32_t>> encode(std::string_view text, const EncodeOptions& options) const;
  // The older spelling: add_bos asks for the start of a sequence
  // (EncodeOptions::add_special); BOS is added only if the vocabulary wants it.
  Result<std::vector<int32_t>> encode(std::string_view text, bool add_bos,
                                      bool continuation = false) const;

  // Text of `token` as printed right after `previous` (streaming output); pass
  // bos() as `previous` for the first token of a sequence. Ids outside the
  // vocabulary print nothing, control tokens too unless print_control. The
  // pieces of a byte-level vocabulary are bytes: a character may span two
  // tokens, and each call returns its part, so the concatenated stream is
  // exact UTF-8 (write it as bytes; do not validate each piece).
  std::string decode_token(int32_t previous, int32_t token, bool print_control = false) const;

  // Text of a whole sequence, with the same rules as decode_token.
  std::string decode(std::span<const int32_t> tokens, bool print_control = false) const;

  const Vocabulary& vocabulary() const { return *vocab_; }
  int32_t bos() const { return vocab_->bos_id; }
  int32_t eos() const { return vocab_->eos_id; }
  // Whether encode({add_special}) starts with BOS.
  bool adds_bos() const { return vocab_->add_bos && has_token(vocab_->bos_id); }
  // The tokens that end a generation: eos, eot, and the vocabulary's other
  // end-of-turn control tokens (<|im_end|>, <|eot_id|>, <|eom_id|>,
  // <end_of_turn>, <|endoftext|>), sorted.
  const std::vector<int32_t>& end_of_generation() const { return stop_tokens_; }
  bool is_end_of_generation(int32_t token) const;

  // Id of a piece that text can produce (normal/user-defined/undefined), or -1.
  int32_t find_piece(std::string_view piece) const;

 private:
  struct Section {
    std::string_view text;  // plain text, when token < 0
    int32_t token = -1;     // an added token
  };
  bool has_token(int32_t id) const { return id >= 0 && id < vocab_->size(); }
  // Splits `text` on the added tokens it may contain (control ones only when
  // parse_special), honouring their lstrip/rstrip.
  std::vector<Section> partition(std::string_view text, bool parse_special) const;

  struct SpecialMatcher;

  std::shared_ptr<const Vocabulary> vocab_;
  std::shared_ptr<const TokenizerModel> model_;
  std::shared_ptr<const SpecialMatcher> specials_;
  Status build_status_;
  std::vector<int32_t> stop_tokens_;
};

// A Tokenizer for `vocab`, or the reason the vocabulary cannot be used
// (an unknown pre-tokenizer, a regex the engine does not support, ...).
Result<Tokenizer> make_tokenizer(Vocabulary vocab);

}  // namespace tessera
