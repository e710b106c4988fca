// One forward's tokens: each with its sequence, its position, how it sees the
// other tokens of the batch, and what the forward should do with it.
// docs/architecture.md, "The forward batch", has the normative rule:
//
// Token i sees (1) the entries stored for seq[i] before this forward that the
// store's WindowRule lets a query at pos[i] see and that are of branch 0 or
// of branch[i], and (2) every batch token j of the same sequence such that
// j == i, j is an ancestor of i through `parent`, or block[j] == block[i] != 0
// (and branch[j] == branch[i]); in-batch keys are cut by the same WindowRule.
//
//   chain (prefill, decode):  parent = the previous token of the sequence, or -1
//   tree (verification):      parent = the tree parent, pos = base + depth
//   block (block diffusion):  equal nonzero block ids see each other; parent
//                             links the block to what precedes it
//   several sequences:        each token names its own
//   branches (BIM):           a branch id per token (0: the shared prefix);
//                             each branch's positions restart at the prefix
//                             length, parents stay within the branch
//
// Flags: kWriteKv stores the token's K/V in the cache after the forward (a
// token without it is attended within the batch and forgotten); kOutputLogits
// asks for its logits (rows come back in batch order).
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "core/cache/cache_store.h"

namespace tessera {

enum BatchFlag : uint8_t {
  kWriteKv = 1,
  kOutputLogits = 2,
};

class Batch {
 public:
  // Appends one token. parent: an earlier index of this batch (same
  // sequence, of branch 0 or the token's own), or -1. Returns its index.
  int32_t add(int32_t token, SequenceId seq, int32_t position, int32_t parent, uint8_t flags,
              int16_t block = 0, BranchId branch = 0);
  // Appends tokens continuing `seq` at positions first_position, +1, ...,
  // each the parent of the next (the first continues the stored context, or
  // the sequence's last token already in this batch). Logits for every token
  // or only the last.
  void add_chain(SequenceId seq, std::span<const int32_t> tokens, int32_t first_position,
                 bool all_logits, bool write_kv = true);
  void clear();
  void reserve(std::size_t tokens);

  int32_t size() const { return static_cast<int32_t>(tokens_.size()); }
  bool empty() const { return tokens_.empty(); }
  std::span<const int32_t> tokens() const { return tokens_; }
  std::span<const SequenceId> seqs() const { return seqs_; }
  std::span<const int32_t> positions() const { return positions_; }
  std::span<const int32_t> parents() const { return parents_; }
  std::span<const int16_t> blocks() const { return blocks_; }
  std::span<const BranchId> branches() const { return branches_; }
  // Whether any token is of a branch other than 0.
  bool any_branch() const { return any_branch_; }
  std::span<const uint8_t> flags() const { return flags_; }
  // Tokens with kOutputLogits.
  int32_t output_rows() const { return output_rows_; }
  // True when every token's parent is the previous token of its sequence in
  // the batch (-1 for the first of each) and no block ids are set: plain
  // causal attention within each sequence, and the batch may be split into
  // chunks anywhere.
  bool chains_only() const { return chains_; }

 private:
  // The last index of `seq` in the batch, or -1.
  int32_t last_of(SequenceId seq) const;

  std::vector<int32_t> tokens_;
  std::vector<SequenceId> seqs_;
  std::vector<int32_t> positions_;
  std::vector<int32_t> parents_;
  std::vector<int16_t> blocks_;
  std::vector<BranchId> branches_;
  std::vector<uint8_t> flags_;
  std::vector<std::pair<SequenceId, int32_t>> last_of_seq_;  // a batch holds few sequences
  int32_t output_rows_ = 0;
  bool chains_ = true;
  bool any_branch_ = false;
};

}  // namespace tessera
