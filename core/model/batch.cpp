#include "core/model/batch.h"

namespace tessera {

int32_t Batch::last_of(SequenceId seq) const {
  for (const auto& [s, index] : last_of_seq_)
    if (s == seq) return index;
  return -1;
}

int32_t Batch::add(int32_t token, SequenceId seq, int32_t position, int32_t parent, uint8_t flags,
                   int16_t block, BranchId branch) {
  const int32_t index = size();
  if (parent != last_of(seq) || block != 0) chains_ = false;
  any_branch_ = any_branch_ || branch != 0;
  bool known = false;
  for (auto& [s, last] : last_of_seq_)
    if (s == seq) {
      last = index;
      known = true;
    }
  if (!known) last_of_seq_.emplace_back(seq, index);
  tokens_.push_back(token);
  seqs_.push_back(seq);
  positions_.push_back(position);
  parents_.push_back(parent);
  blocks_.push_back(block);
  branches_.push_back(branch);
  flags_.push_back(flags);
  if (flags & kOutputLogits) ++output_rows_;
  return index;
}

void Batch::add_chain(SequenceId seq, std::span<const int32_t> tokens, int32_t first_position,
                      bool all_logits, bool write_kv) {
  // The chain continues the sequence's last token already in the batch, if any.
  int32_t parent = last_of(seq);
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    const bool last = i + 1 == tokens.size();
    const uint8_t flags =
        static_cast<uint8_t>((write_kv ? kWriteKv : 0) | (all_logits || last ? kOutputLogits : 0));
    parent = add(tokens[i], seq, first_position + static_cast<int32_t>(i), parent, flags);
  }
}

void Batch::clear() {
  tokens_.clear();
  seqs_.clear();
  positions_.clear();
  parents_.clear();
  blocks_.clear();
  branches_.clear();
  flags_.clear();
  last_of_seq_.clear();
  output_rows_ = 0;
  chains_ = true;
  any_branch_ = false;
}

void Batch::reserve(std::size_t tokens) {
  tokens_.reserve(tokens);
  seqs_.reserve(tokens);
  positions_.reserve(tokens);
  parents_.reserve(tokens);
  blocks_.reserve(tokens);
  branches_.reserve(tokens);
  flags_.reserve(tokens);
}

}  // namespace tessera
