// Block-diffusion tokens in a forward batch (core/model/batch.h): a block's
// tokens share a nonzero block id, so they see each other both ways, and
// parents chain every token to the previous one of its sequence in the batch.
//
// The trap the chain avoids: block-mate visibility is not inherited through
// `parent`. A token sees its ancestors and its own block's tokens, never the
// block mates of an ancestor. With several blocks in one batch (a prompt's
// prefill, a clean block followed by a masked one), the first token of block
// k + 1 must have the LAST token of block k as its parent: then its ancestors
// are every earlier token of the batch, and block k + 1 sees all of block k.
// Linking it to any other token of block k would hide the tokens after that
// one (tests/decode/block_diffusion_visibility_test.cpp checks the rule
// against a dense block-causal mask).
#pragma once

#include <cstdint>
#include <span>

#include "core/model/batch.h"

namespace tessera {

// Appends `tokens` as one block at positions first_position, +1, ..., each
// the parent of the next, the first's parent `parent` (-1: the first of the
// sequence in this batch; else the last token of the previous block). Every
// token gets `flags` and `block_id` (nonzero, distinct from the other blocks
// of the sequence in this batch). Returns the index of the block's last token.
int32_t add_block(Batch& batch, SequenceId seq, BranchId branch, std::span<const int32_t> tokens,
                  int32_t first_position, int16_t block_id, uint8_t flags, int32_t parent);

// A block id for the block starting at `position`: nonzero, and distinct for
// the blocks of one sequence in one batch (fewer than 32767 of them).
int16_t block_id_at(int64_t position, int block);

}  // namespace tessera
