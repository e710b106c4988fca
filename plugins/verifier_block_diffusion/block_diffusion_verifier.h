// Block-diffusion decoding (SDAR; algorithms.md §2, the conventions of
// tok512-sdar-1m in ../shared/models/README.md). One verify() decodes one
// block per lane:
//   - prefill: the lane's whole blocks go into the cache, several per
//     forward, block-causal (each block sees itself and earlier blocks);
//     the tokens of a partial block stay waiting and start the next block,
//     never masked;
//   - denoise: the block, its undecoded positions set to the mask token,
//     attends to the cache and to itself without writing K/V; after each
//     forward the unmasking rule reveals some positions (unmasking.h); at
//     most decode.denoise_steps forwards;
//   - commit: one forward of the finished block writes its K/V (those of the
//     last denoise saw masks), and the block's new tokens are emitted.
// Lanes decode side by side: one denoise forward serves every lane still
// masked, one commit forward all of them.
//
// decode.fixed_shape runs every forward through the fixed-shape step
// (core/model/fixed_shape_step.h) instead: one block per call, the static
// store's memory read under an additive mask and written by keep/insert, as
// an exported embedded graph would; the same tokens, nothing allocated after
// start.
//
// decode.fuse_commit drops the commit forward: the finished block waits
// uncached, and the next step's first denoise forward carries it (clean,
// kWriteKv) with the new masked block chained after it: the same
// computation, one forward per block fewer.
#pragma once

#include <vector>

#include "core/decode/verifier.h"
#include "core/model/batch.h"
#include "core/model/fixed_shape_step.h"
#include "core/plugin/options.h"
#include "core/plugin/services.h"
#include "plugins/diffusion_common/diffusion_model.h"
#include "plugins/diffusion_common/unmasking.h"

namespace tessera {

class BlockDiffusionVerifier final : public Verifier {
 public:
  BlockDiffusionVerifier(const OptionValues& options, PluginServices& services);
  Status prefill(DecodeContext& context, SequenceState& lane) override;
  Status verify(DecodeContext& context, std::span<const LaneStep> lanes) override;
  bool takes_drafts() const override { return false; }

 private:
  // One lane's block in this step.
  struct LaneBlock {
    int64_t carry = 0;  // a whole block before it still to write (fuse_commit), or 0
    int64_t start = 0;  // its first position (a multiple of the block size)
    int fixed = 0;      // leading tokens given (the prompt's partial block)
    int32_t row = 0;    // its first token's index in the current batch
    int64_t fits = 0;   // tokens of it the lane's cache has room for
    std::vector<int32_t> tokens;
    std::vector<TokenLogprob> logprobs;  // per position, when the lane asks (LaneStep::logprobs)
  };

  // Checks the lanes and sets up their blocks (tokens given, then masks).
  Status start_blocks(DecodeContext& context, std::span<const LaneStep> lanes);
  // The denoise forwards: until no block has a mask.
  Status denoise(DecodeContext& context, std::span<const LaneStep> lanes);
  // The commit forward: writes each block's K/V (as much as fits) and emits it.
  Status commit(DecodeContext& context, std::span<const LaneStep> lanes);
  // One forward of the target: the transformer, or the fixed-shape step.
  Result<std::span<const float>> run_forward(DecodeContext& context, const Batch& batch);
  bool masked(const LaneBlock& block) const;

  DiffusionModel model_;
  UnmaskSettings settings_;
  Batch batch_;
  std::vector<LaneBlock> blocks_;
  std::vector<int32_t> commit_rows_;
  BlockUnmasker unmasker_;
  // decode.fixed_shape: every forward through the fixed-shape step.
  std::unique_ptr<FixedShapeStep> fixed_;
  // decode.fuse_commit: a finished block is written by the next block's
  // first denoise forward instead of a commit forward of its own.
  bool fuse_commit_ = false;
};

}  // namespace tessera
