// The `dlm` proposer: a block-diffusion model (SDAR-style, blocks aligned to
// absolute positions, a mask token; decode.draft_model) drafts for an
// autoregressive target, DFlash-style (algorithms.md §3).
//
// Per lane the drafter keeps a cache of its own holding the K/V of the
// lane's whole blocks of accepted tokens, written block-causally (each block
// one block id, parents chained, kWriteKv). Nothing drafted is ever written,
// so nothing is ever taken back. Blocks the cache lacks ride with the next
// drafting forward (a long prompt's go first, in forwards of their own).
//
// To draft: the lane's tokens after its last whole block (the partial
// block, ending with the lane's last token), masks to that block's end, then
// whole blocks of masks until at least decode.draft_tokens positions are
// masked, chained so a later block sees the earlier ones; none of it is
// written. decode.denoise_blocks = "together" (the default) denoises every
// drafted block in each forward, a later block seeing the earlier ones as
// they stand (still masked in the first pass); "in_order" denoises one block
// at a time, as SDAR decodes, each seeing the blocks drafted before it
// revealed (a forward per block and pass). A forward reveals the masks by
// argmax over the target's vocabulary (never the mask): all of them with
// decode.denoise_passes = 1, DFlash-style; more passes reveal by the
// threshold rule between them and all at the last. The drafts are point
// masses (Draft::probs empty), so the verifier's acceptance is exact for
// greedy and sampled lanes alike.
//
// For the `tree` proposer, expand() gives the next-token distribution after
// the lane's tokens and a tree path from one denoise forward of the block(s)
// holding that path with masks after it; several paths share a forward as
// separate groups of blocks (distinct block ids, so they never see each
// other).
#pragma once

#include <memory>
#include <vector>

#include "core/cache/checked_cache_store.h"
#include "core/decode/proposer.h"
#include "core/model/batch.h"
#include "core/model/transformer.h"
#include "core/plugin/options.h"
#include "core/plugin/services.h"
#include "core/sampling/sampler.h"
#include "plugins/diffusion_common/diffusion_model.h"
#include "plugins/diffusion_common/unmasking.h"

namespace tessera {

class DlmProposer final : public Proposer {
 public:
  DlmProposer(const OptionValues& options, PluginServices& services);

  Status begin(DecodeContext& context, SequenceState& lane) override;
  Status propose(DecodeContext& context, SequenceState& lane, Draft& draft) override;
  void end(DecodeContext& context, SequenceState& lane) override;
  bool can_expand() const override { return true; }
  Status expand(DecodeContext& context, SequenceState& lane, const Draft& tree,
                std::span<const int32_t> at, std::span<float> probs) override;

 private:
  // Where a lane stands in the drafter's cache: it holds tokens [0, written);
  // the lane's whole blocks up to `writable` may be written (all of them,
  // unless the cache's room ends first).
  struct Where {
    SequenceId seq = 0;
    int64_t written = 0;
    int64_t writable = 0;
  };
  // A tree node whose distribution waits in the current expansion batch.
  struct Expansion {
    std::size_t index = 0;  // into `at` and `probs`
    int32_t row = 0;        // its logits row
  };

  // One drafter forward over batch_ (counted): the logits of its rows.
  Result<std::span<const float>> run_batch(DecodeContext& context);
  Result<Where> locate(const SequenceState& lane) const;
  // Writes the blocks the cache lacks in forwards of their own when they
  // would not fit beside `beside` tokens in one forward (a long prompt).
  Status write_alone_if_too_many(DecodeContext& context, const SequenceState& lane, Where& where,
                                 std::size_t beside);
  // Appends the lane's blocks [from, to) with kWriteKv; returns the index of
  // the last token (-1 when none).
  int32_t add_written_blocks(const SequenceState& lane, SequenceId seq, int64_t from, int64_t to);
  // Appends `tokens` (positions from `first`, a block start) cut into the
  // model's aligned blocks, each with a block id new to the batch, chained
  // after `parent`; blocks ending after `logits_from` ask for every row's
  // logits. Nothing is written.
  void add_group(SequenceId seq, std::span<const int32_t> tokens, int64_t first,
                 int64_t logits_from, int32_t parent);
  // group_ for the path to tree node `node` (-1: the lane's tokens alone):
  // the lane's unwritten tokens, the path, masks to the end of the block
  // holding the next position; returns that position.
  int64_t build_path_group(const SequenceState& lane, const Where& where, const Draft& tree,
                           int32_t node);
  // The denoise forwards of a draft (group_ from where.writable to `end`,
  // masked from `next`): every drafted block in each forward, or one block
  // at a time.
  Status denoise_together(DecodeContext& context, const SequenceState& lane, Where& where,
                          int64_t next, int64_t end);
  Status denoise_in_order(DecodeContext& context, const SequenceState& lane, Where& where,
                          int64_t next, int64_t end);
  // Runs the expansion batch (blocks riding along included) and writes the
  // distributions of its nodes.
  Status run_expansions(DecodeContext& context, const SequenceState& lane, std::span<float> probs);
  int64_t round_up_to_block(int64_t position) const;

  int draft_tokens_;
  int passes_;
  bool blocks_together_;
  int64_t capacity_;
  int max_batch_;
  DiffusionModel model_;
  std::size_t target_vocab_ = 0;
  UnmaskSettings settings_;
  std::unique_ptr<Transformer> forward_;
  std::unique_ptr<CheckedCacheStore> cache_;
  SequenceId next_sequence_ = 0;
  // Scratch, sized once.
  Batch batch_;
  int16_t next_block_id_ = 1;
  std::vector<int32_t> group_;  // one group's tokens: clean, then masks (revealed in place)
  std::vector<int32_t> path_;
  std::vector<Expansion> expansions_;
  std::vector<float> row_probs_;
  BlockUnmasker unmasker_;
  Sampler argmax_;  // greedy: drafts are argmaxes whatever the lane samples
};

}  // namespace tessera
