#include "plugins/verifier_block_diffusion/block_diffusion_verifier.h"

#include <algorithm>
#include <string>

#include "core/backend/backend.h"
#include "core/cache/checked_cache_store.h"
#include "core/model/transformer.h"
#include "core/plugin/sdk.h"
#include "plugins/diffusion_common/block_batch.h"

namespace tessera {

BlockDiffusionVerifier::BlockDiffusionVerifier(const OptionValues& options,
                                               PluginServices& services) {
  const LoadedModel& target = *sdk::value_or_refuse(services.target_model());
  model_ = sdk::value_or_refuse(diffusion_model(target, "verifier 'block_diffusion'"));
  settings_.rule = sdk::value_or_refuse(parse_unmask_rule(options.get_string("unmask")));
  const auto steps = static_cast<int>(options.get_int("denoise_steps"));
  settings_.steps = steps > 0 ? steps : model_.block;
  settings_.threshold = options.get_float("threshold");
  settings_.entropy_bound = options.get_float("entropy_bound");
  if (options.get_bool("fixed_shape")) {
    Backend* backend = sdk::value_or_refuse(services.backend());
    fixed_ = sdk::value_or_refuse(
        FixedShapeStep::create(target, *backend, model_.block, services.max_tokens()));
  }
  fuse_commit_ = options.get_bool("fuse_commit");
  if (fuse_commit_ && fixed_)
    throw sdk::Refusal(invalid_argument(
        "decode.fuse_commit carries two blocks in one forward, and the fixed-shape step takes "
        "one; set decode.fuse_commit = false with decode.fixed_shape = true"));
  if (model_.block * (fuse_commit_ ? 2 : 1) > services.max_batch())
    throw sdk::Refusal(
        invalid_argument("the model's blocks are " + std::to_string(model_.block) +
                         " tokens, more than one forward carries (decode.max_batch = " +
                         std::to_string(services.max_batch()) + "); raise decode.max_batch"));
}

Status BlockDiffusionVerifier::prefill(DecodeContext& context, SequenceState& lane) {
  const int block = model_.block;
  if (lane.cached % block != 0)
    return failed_precondition(
        "the lane's cache holds " + std::to_string(lane.cached) + " tokens, not whole blocks of " +
        std::to_string(block) +
        "; a block-diffusion lane is prefilled block by block by this verifier");
  auto whole = static_cast<int64_t>(lane.tokens.size()) / block * block;
  // With fuse_commit the last whole block waits: the next block's first
  // denoise forward writes it.
  if (fuse_commit_) whole = std::max(lane.cached, whole - block);
  // The fixed-shape step takes one block per call; the forward, as many as fit.
  const int64_t per_forward = fixed_ ? block : context.target.max_batch() / block * block;
  for (int64_t begin = lane.cached; begin < whole; begin += per_forward) {
    const int64_t end = std::min(whole, begin + per_forward);
    batch_.clear();
    int32_t last = -1;
    for (int64_t b = begin; b < end; b += block) {
      const std::span<const int32_t> tokens(lane.tokens.data() + b,
                                            static_cast<std::size_t>(block));
      last = add_block(batch_, lane.id, lane.branch, tokens, static_cast<int32_t>(b),
                       block_id_at(b, block), kWriteKv, last);
    }
    RETURN_IF_ERROR(run_forward(context, batch_).status());
    ++context.counters.commit_forwards;
    lane.cached = end;
  }
  return ok_status();
}

Status BlockDiffusionVerifier::start_blocks(DecodeContext& context,
                                            std::span<const LaneStep> lanes) {
  const int block = model_.block;
  if (static_cast<int64_t>(lanes.size()) * block > context.target.max_batch())
    return invalid_argument(std::to_string(lanes.size()) + " lanes of " + std::to_string(block) +
                            "-token blocks need more than decode.max_batch = " +
                            std::to_string(context.target.max_batch()) +
                            " tokens per forward; raise decode.max_batch");
  if (blocks_.size() < lanes.size()) blocks_.resize(lanes.size());
  const bool bounded = !context.cache.policy().evicts;
  for (std::size_t i = 0; i < lanes.size(); ++i) {
    SequenceState& lane = *lanes[i].lane;
    if (!lanes[i].draft->empty())
      return invalid_argument("verifier 'block_diffusion' takes no drafts");
    RETURN_IF_ERROR(prefill(context, lane));
    LaneBlock& b = blocks_[i];
    // A whole block still waiting (fuse_commit) rides with the first denoise.
    b.carry = static_cast<int64_t>(lane.tokens.size()) - lane.cached >= block ? block : 0;
    b.start = lane.cached + b.carry;
    b.fixed = static_cast<int>(static_cast<int64_t>(lane.tokens.size()) - b.start);
    b.tokens.assign(lane.tokens.begin() + static_cast<std::ptrdiff_t>(b.start), lane.tokens.end());
    b.tokens.resize(static_cast<std::size_t>(block), model_.mask);
    b.fits = block;
    if (lanes[i].logprobs) b.logprobs.assign(static_cast<std::size_t>(block), TokenLogprob{});
    if (!bounded) continue;
    // Lanes in one sequence (branches) share its room, in lane order.
    ASSIGN_OR_RETURN(const SequenceInfo info, context.cache.info(lane.id));
    int64_t room = lane.capacity - info.stored - b.carry;
    for (std::size_t j = 0; j < i; ++j)
      if (lanes[j].lane->id == lane.id) room -= blocks_[j].carry + blocks_[j].fits;
    b.fits = std::clamp<int64_t>(room, 0, block);
  }
  return ok_status();
}

Result<std::span<const float>> BlockDiffusionVerifier::run_forward(DecodeContext& context,
                                                                   const Batch& batch) {
  ++context.counters.target_forwards;
  if (fixed_) return fixed_->run(context.cache, batch);
  return context.target.forward(context.cache, batch);
}

bool BlockDiffusionVerifier::masked(const LaneBlock& block) const {
  return std::find(block.tokens.begin(), block.tokens.end(), model_.mask) != block.tokens.end();
}

Status BlockDiffusionVerifier::denoise(DecodeContext& context, std::span<const LaneStep> lanes) {
  const int block = model_.block;
  const auto vocab = static_cast<std::size_t>(model_.vocab);
  // The forward takes every lane's block at once; the fixed-shape step one.
  const std::size_t group = fixed_ ? 1 : lanes.size();
  for (int step = 0; step < settings_.steps; ++step) {
    for (std::size_t first = 0; first < lanes.size(); first += group) {
      const std::size_t last = std::min(lanes.size(), first + group);
      batch_.clear();
      int32_t logit_rows = 0;  // rows come back for the kOutputLogits tokens only
      for (std::size_t i = first; i < last; ++i) {
        LaneBlock& b = blocks_[i];
        if (!masked(b)) continue;
        const SequenceState& lane = *lanes[i].lane;
        int32_t parent = -1;
        if (step == 0 && b.carry > 0) {
          // The previous block, clean, written by this forward; the masked
          // block chained after its last token sees all of it.
          const std::span<const int32_t> carried(lane.tokens.data() + (b.start - b.carry),
                                                 static_cast<std::size_t>(b.carry));
          parent = add_block(batch_, lane.id, lane.branch, carried,
                             static_cast<int32_t>(b.start - b.carry),
                             block_id_at(b.start - b.carry, block), kWriteKv, -1);
        }
        b.row = logit_rows;
        logit_rows += block;
        add_block(batch_, lane.id, lane.branch, b.tokens, static_cast<int32_t>(b.start),
                  block_id_at(b.start, block), kOutputLogits, parent);
      }
      if (batch_.empty()) continue;
      ASSIGN_OR_RETURN(std::span<const float> logits, run_forward(context, batch_));
      ++context.counters.denoise_forwards;
      for (std::size_t i = first; i < last; ++i) {
        LaneBlock& b = blocks_[i];
        if (!masked(b)) continue;
        const std::span<const float> rows = logits.subspan(static_cast<std::size_t>(b.row) * vocab,
                                                           static_cast<std::size_t>(block) * vocab);
        unmasker_.step(model_, settings_, step, rows, b.tokens, lanes[i].lane->sampler,
                       lanes[i].logprobs ? std::span(b.logprobs) : std::span<TokenLogprob>(),
                       lanes[i].top_logprobs);
      }
    }
  }
  return ok_status();
}

Status BlockDiffusionVerifier::commit(DecodeContext& context, std::span<const LaneStep> lanes) {
  const int block = model_.block;
  if (fuse_commit_) {
    // The block waits uncached; the next step's first forward writes it.
    for (std::size_t i = 0; i < lanes.size(); ++i) blocks_[i].fits = 0;
  } else if (fixed_) {
    // One block per step, its K/V written in place (as much as fits).
    for (std::size_t i = 0; i < lanes.size(); ++i) {
      const LaneBlock& b = blocks_[i];
      batch_.clear();
      int32_t parent = -1;
      for (int t = 0; t < block; ++t)
        parent = batch_.add(b.tokens[static_cast<std::size_t>(t)], lanes[i].lane->id,
                            static_cast<int32_t>(b.start + t), parent, t < b.fits ? kWriteKv : 0,
                            block_id_at(b.start, block), lanes[i].lane->branch);
      RETURN_IF_ERROR(run_forward(context, batch_).status());
      ++context.counters.commit_forwards;
    }
  } else {
    batch_.clear();
    commit_rows_.clear();
    for (std::size_t i = 0; i < lanes.size(); ++i) {
      LaneBlock& b = blocks_[i];
      b.row = batch_.size();
      add_block(batch_, lanes[i].lane->id, lanes[i].lane->branch, b.tokens,
                static_cast<int32_t>(b.start), block_id_at(b.start, block), 0, -1);
      for (int64_t t = 0; t < b.fits; ++t) commit_rows_.push_back(b.row + static_cast<int32_t>(t));
    }
    // K/V held pending, then only the rows that fit written (all but at the
    // end of a bounded cache).
    RETURN_IF_ERROR(run_forward(context, batch_).status());
    ++context.counters.commit_forwards;
    RETURN_IF_ERROR(context.target.commit_pending(context.cache, batch_, commit_rows_));
  }
  for (std::size_t i = 0; i < lanes.size(); ++i) {
    const LaneBlock& b = blocks_[i];
    SequenceState& lane = *lanes[i].lane;
    lanes[i].emitted->insert(lanes[i].emitted->end(), b.tokens.begin() + b.fixed, b.tokens.end());
    if (lanes[i].logprobs)
      lanes[i].logprobs->insert(lanes[i].logprobs->end(), b.logprobs.begin() + b.fixed,
                                b.logprobs.end());
    context.counters.emitted += block - b.fixed;
    lane.cached = b.start + b.fits;
  }
  return ok_status();
}

Status BlockDiffusionVerifier::verify(DecodeContext& context, std::span<const LaneStep> lanes) {
  RETURN_IF_ERROR(start_blocks(context, lanes));
  RETURN_IF_ERROR(denoise(context, lanes));
  return commit(context, lanes);
}

}  // namespace tessera
