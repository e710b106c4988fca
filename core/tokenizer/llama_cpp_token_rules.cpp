#include "core/tokenizer/llama_cpp_token_rules.h"

#include <algorithm>
#include <array>

namespace tessera {
namespace {

// llama-vocab.cpp's list for special_eog_ids (commit 3f545bec).
constexpr std::array<std::string_view, 22> kEndOfGeneration = {"<|eot_id|>",
                                                               "<|im_end|>",
                                                               "<|end|>",
                                                               "<|return|>",
                                                               "<|call|>",
                                                               "<|flush|>",
                                                               "<|calls|>",
                                                               "<end_of_turn>",
                                                               "<|endoftext|>",
                                                               "</s>",
                                                               "<|eom_id|>",
                                                               "<EOT>",
                                                               "_<EOT>",
                                                               "[EOT]",
                                                               "[EOS]",
                                                               "<|end_of_text|>",
                                                               "<end_of_utterance>",
                                                               "<eos>",
                                                               "<turn|>",
                                                               "<|tool_response>",
                                                               "<｜end▁of▁sentence｜>",
                                                               "[e~["};

// llama-vocab.cpp's texts for an end-of-turn token when the file names none.
constexpr std::array<std::string_view, 11> kEndOfTurn = {
    "<|eot_id|>",        "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>",
    "<|end_of_text|>",   "<EOT>",      "_<EOT>",  "[EOT]",         "<｜end▁of▁sentence｜>",
    "<end_of_utterance>"};

bool listed(std::span<const std::string_view> texts, std::string_view piece) {
  return std::find(texts.begin(), texts.end(), piece) != texts.end();
}

}  // namespace

std::span<const std::string_view> end_of_generation_texts() {
  return kEndOfGeneration;
}

void apply_llama_cpp_token_rules(Vocabulary& vocab) {
  const std::size_t n = std::min(vocab.pieces.size(), vocab.types.size());
  for (std::size_t id = 0; id < n; ++id) {
    const std::string& piece = vocab.pieces[id];
    if (listed(kEndOfGeneration, piece)) vocab.types[id] = TokenType::kControl;
    // llama.cpp takes the first match in hash order; with one such token per
    // vocabulary (the families here) the lowest id is the same token.
    if (vocab.eot_id < 0 && listed(kEndOfTurn, piece)) vocab.eot_id = static_cast<int32_t>(id);
  }
}

}  // namespace tessera
