#include "plugins/proposer_dlm/dlm_proposer.h"

#include <algorithm>
#include <string>

#include "core/model/model.h"
#include "core/plugin/sdk.h"
#include "plugins/diffusion_common/block_batch.h"
#include "plugins/proposer_common/model_drafter.h"
#include "plugins/proposer_dlm/dlm_pair.h"

namespace tessera {
namespace {

struct DlmState final : ProposerState {
  SequenceId seq = 0;
};

SequenceId seq_of(const SequenceState& lane) {
  return static_cast<const DlmState&>(*lane.proposer_state).seq;
}

}  // namespace

DlmProposer::DlmProposer(const OptionValues& options, PluginServices& services)
    : draft_tokens_(static_cast<int>(options.get_int("draft_tokens"))),
      passes_(static_cast<int>(options.get_int("denoise_passes"))),
      blocks_together_(options.get_string("denoise_blocks") == "together"),
      capacity_(services.max_tokens()),
      max_batch_(services.max_batch()) {
  const std::string name = options.get_string("draft_model");
  if (name.empty())
    throw sdk::Refusal(invalid_argument(
        "decode.draft_model is empty: name the block-diffusion drafter's file (found like "
        "model.path), e.g. decode.draft_model = \"tok512-sdar-1m.gguf\""));
  const LoadedModel& drafter =
      *sdk::value_or_refuse(services.load_model(name, "decode.draft_model"));
  const LoadedModel& target = *sdk::value_or_refuse(services.target_model());
  sdk::refuse_unless(check_dlm_pair(drafter, target));
  model_ = sdk::value_or_refuse(diffusion_model(drafter, "proposer 'dlm' (decode.draft_model)"));
  target_vocab_ = static_cast<std::size_t>(target.config.vocab_size);
  // The widest draft: a partial block of block - 1 tokens, its masks, and
  // whole blocks of masks up to draft_tokens (the last one partly beyond).
  const int widest = draft_tokens_ + 2 * (model_.block - 1);
  if (widest > max_batch_)
    throw sdk::Refusal(invalid_argument(
        "decode.draft_tokens = " + std::to_string(draft_tokens_) + " with " +
        std::to_string(model_.block) + "-token blocks needs up to " + std::to_string(widest) +
        " tokens per draft forward, more than decode.max_batch = " + std::to_string(max_batch_) +
        "; lower decode.draft_tokens or raise decode.max_batch"));
  settings_.rule = UnmaskRule::kThreshold;
  settings_.steps = passes_;
  settings_.threshold = options.get_float("threshold");
  forward_ = sdk::value_or_refuse(services.make_transformer(drafter));
  cache_ = sdk::value_or_refuse(services.make_cache(drafter));
  batch_.reserve(static_cast<std::size_t>(max_batch_));
  group_.reserve(static_cast<std::size_t>(max_batch_));
  path_.reserve(static_cast<std::size_t>(max_batch_));
  expansions_.reserve(static_cast<std::size_t>(max_batch_));
  row_probs_.reserve(target_vocab_);
}

Status DlmProposer::begin(DecodeContext&, SequenceState& lane) {
  auto state = std::make_unique<DlmState>();
  state->seq = next_sequence_++;
  RETURN_IF_ERROR(cache_->allocate(state->seq, capacity_).with_context("the dlm drafter's cache"));
  lane.proposer_state = std::move(state);
  return ok_status();
}

void DlmProposer::end(DecodeContext&, SequenceState& lane) {
  if (lane.proposer_state) (void)cache_->release(seq_of(lane));
}

int64_t DlmProposer::round_up_to_block(int64_t position) const {
  return (position + model_.block - 1) / model_.block * model_.block;
}

Result<DlmProposer::Where> DlmProposer::locate(const SequenceState& lane) const {
  Where where;
  where.seq = seq_of(lane);
  ASSIGN_OR_RETURN(const SequenceInfo info, cache_->info(where.seq));
  const auto whole = static_cast<int64_t>(lane.tokens.size()) / model_.block * model_.block;
  // A store that never evicts takes no block beyond its room; the lane's
  // blocks past it stay in the drafting batch, unwritten.
  where.writable = cache_->policy().evicts
                       ? whole
                       : std::min(whole, info.capacity / model_.block * model_.block);
  where.written = info.logical_length;
  if (where.written % model_.block != 0 || where.written > whole)
    return internal_error("the dlm drafter's cache holds " + std::to_string(where.written) +
                          " tokens, not whole blocks of the lane's " +
                          std::to_string(lane.tokens.size()));
  where.writable = std::max(where.writable, where.written);
  return where;
}

Result<std::span<const float>> DlmProposer::run_batch(DecodeContext& context) {
  Result<std::span<const float>> logits = forward_->forward(*cache_, batch_);
  if (!logits.ok()) return logits.status().with_context("the dlm drafter");
  ++context.counters.draft_forwards;
  return logits;
}

int32_t DlmProposer::add_written_blocks(const SequenceState& lane, SequenceId seq, int64_t from,
                                        int64_t to) {
  int32_t last = -1;
  for (int64_t b = from; b < to; b += model_.block) {
    const std::span<const int32_t> block(lane.tokens.data() + b,
                                         static_cast<std::size_t>(model_.block));
    last =
        add_block(batch_, seq, 0, block, static_cast<int32_t>(b), next_block_id_++, kWriteKv, last);
  }
  return last;
}

Status DlmProposer::write_alone_if_too_many(DecodeContext& context, const SequenceState& lane,
                                            Where& where, std::size_t beside) {
  const auto missing = static_cast<std::size_t>(where.writable - where.written);
  if (missing + beside <= static_cast<std::size_t>(max_batch_)) return ok_status();
  const int64_t per_forward = max_batch_ / model_.block * model_.block;
  for (int64_t from = where.written; from < where.writable; from += per_forward) {
    const int64_t to = std::min(where.writable, from + per_forward);
    batch_.clear();
    next_block_id_ = 1;
    add_written_blocks(lane, where.seq, from, to);
    RETURN_IF_ERROR(run_batch(context).status());
    where.written = to;
  }
  return ok_status();
}

void DlmProposer::add_group(SequenceId seq, std::span<const int32_t> tokens, int64_t first,
                            int64_t logits_from, int32_t parent) {
  const auto block = static_cast<std::size_t>(model_.block);
  for (std::size_t b = 0; b < tokens.size(); b += block) {
    const int64_t start = first + static_cast<int64_t>(b);
    const bool logits = start + model_.block > logits_from;
    parent = add_block(batch_, seq, 0, tokens.subspan(b, std::min(block, tokens.size() - b)),
                       static_cast<int32_t>(start), next_block_id_++,
                       static_cast<uint8_t>(logits ? kOutputLogits : 0), parent);
  }
}

Status DlmProposer::denoise_together(DecodeContext& context, const SequenceState& lane,
                                     Where& where, int64_t next, int64_t end) {
  const auto vocab = static_cast<std::size_t>(model_.vocab);
  const auto block = static_cast<std::size_t>(model_.block);
  const int64_t first_drafted_block = model_.block_start(next);
  for (int pass = 0; pass < passes_; ++pass) {
    batch_.clear();
    next_block_id_ = 1;
    // Blocks the cache lacks ride with the first pass, written block-causally.
    const int32_t parent = add_written_blocks(lane, where.seq, where.written, where.writable);
    add_group(where.seq, group_, where.writable, next, parent);
    ASSIGN_OR_RETURN(std::span<const float> logits, run_batch(context));
    where.written = where.writable;
    // Logits rows cover the drafted blocks, in order.
    for (int64_t b = first_drafted_block; b < end; b += model_.block) {
      const auto row = static_cast<std::size_t>(b - first_drafted_block);
      const std::span<int32_t> tokens =
          std::span(group_).subspan(static_cast<std::size_t>(b - where.writable), block);
      unmasker_.step(model_, settings_, pass, logits.subspan(row * vocab, block * vocab), tokens,
                     argmax_);
    }
    if (std::find(group_.begin(), group_.end(), model_.mask) == group_.end()) break;
  }
  return ok_status();
}

Status DlmProposer::denoise_in_order(DecodeContext& context, const SequenceState& lane,
                                     Where& where, int64_t next, int64_t end) {
  const auto vocab = static_cast<std::size_t>(model_.vocab);
  const auto block = static_cast<std::size_t>(model_.block);
  // A block never sees later ones, so they stay out of its forwards.
  for (int64_t b = model_.block_start(next); b < end; b += model_.block) {
    const auto through = static_cast<std::size_t>(b - where.writable) + block;
    const std::span<int32_t> tokens = std::span(group_).subspan(through - block, block);
    for (int pass = 0; pass < passes_; ++pass) {
      batch_.clear();
      next_block_id_ = 1;
      const int32_t parent = add_written_blocks(lane, where.seq, where.written, where.writable);
      add_group(where.seq, std::span(group_).first(through), where.writable, b, parent);
      ASSIGN_OR_RETURN(std::span<const float> logits, run_batch(context));
      where.written = where.writable;
      unmasker_.step(model_, settings_, pass, logits.first(block * vocab), tokens, argmax_);
      if (std::find(tokens.begin(), tokens.end(), model_.mask) == tokens.end()) break;
    }
  }
  return ok_status();
}

Status DlmProposer::propose(DecodeContext& context, SequenceState& lane, Draft& draft) {
  ASSIGN_OR_RETURN(Where where, locate(lane));
  const auto next = static_cast<int64_t>(lane.tokens.size());
  const int64_t end = round_up_to_block(next + draft_tokens_);
  // The group: the lane's tokens after its writable blocks, then masks.
  group_.assign(lane.tokens.begin() + where.writable, lane.tokens.end());
  group_.resize(static_cast<std::size_t>(end - where.writable), model_.mask);
  // Only where the drafter's cache has no room for the lane's last whole
  // block (the lane at its end) can the group outgrow a forward: no draft.
  if (group_.size() > static_cast<std::size_t>(max_batch_)) return ok_status();
  RETURN_IF_ERROR(write_alone_if_too_many(context, lane, where, group_.size()));
  if (blocks_together_)
    RETURN_IF_ERROR(denoise_together(context, lane, where, next, end));
  else
    RETURN_IF_ERROR(denoise_in_order(context, lane, where, next, end));
  // The pair check made the mask the one id beyond the target's, and the
  // unmasker never reveals the mask: every drafted id is a target token.
  int32_t parent = -1;
  for (int64_t p = next; p < end; ++p)
    parent = draft.add(group_[static_cast<std::size_t>(p - where.writable)], parent);
  return ok_status();
}

int64_t DlmProposer::build_path_group(const SequenceState& lane, const Where& where,
                                      const Draft& tree, int32_t node) {
  path_.clear();
  for (int32_t n = node; n >= 0; n = tree.parents[static_cast<std::size_t>(n)])
    path_.push_back(tree.tokens[static_cast<std::size_t>(n)]);
  group_.assign(lane.tokens.begin() + where.writable, lane.tokens.end());
  group_.insert(group_.end(), path_.rbegin(), path_.rend());
  const int64_t position = where.writable + static_cast<int64_t>(group_.size());
  group_.resize(static_cast<std::size_t>(round_up_to_block(position + 1) - where.writable),
                model_.mask);
  return position;
}

Status DlmProposer::run_expansions(DecodeContext& context, const SequenceState& lane,
                                   std::span<float> probs) {
  if (batch_.empty()) return ok_status();
  ASSIGN_OR_RETURN(std::span<const float> logits, run_batch(context));
  const auto vocab = static_cast<std::size_t>(model_.vocab);
  for (const Expansion& e : expansions_) {
    // The target's ids only: the mask is the one beyond them.
    const std::span<const float> row =
        logits.subspan(static_cast<std::size_t>(e.row) * vocab, target_vocab_);
    const std::span<float> out = probs.subspan(e.index * target_vocab_, target_vocab_);
    if (lane.sampler.greedy()) {
      softmax(row, out);
    } else {
      lane.sampler.distribution(row, row_probs_);
      std::copy(row_probs_.begin(), row_probs_.end(), out.begin());
    }
  }
  expansions_.clear();
  return ok_status();
}

Status DlmProposer::expand(DecodeContext& context, SequenceState& lane, const Draft& tree,
                           std::span<const int32_t> at, std::span<float> probs) {
  if (at.empty()) return ok_status();
  ASSIGN_OR_RETURN(Where where, locate(lane));
  // The widest group (the deepest path) decides whether the blocks the cache
  // lacks can ride along.
  int32_t deepest = 0;
  for (const int32_t node : at) {
    int32_t depth = 0;
    for (int32_t n = node; n >= 0; n = tree.parents[static_cast<std::size_t>(n)]) ++depth;
    deepest = std::max(deepest, depth);
  }
  const int64_t widest =
      round_up_to_block(static_cast<int64_t>(lane.tokens.size()) + deepest + 1) - where.writable;
  RETURN_IF_ERROR(write_alone_if_too_many(context, lane, where, static_cast<std::size_t>(widest)));
  batch_.clear();
  next_block_id_ = 1;
  expansions_.clear();
  // Blocks the cache lacks ride with the first forward; every path's group
  // chains after them, so it sees them all.
  int32_t parent = add_written_blocks(lane, where.seq, where.written, where.writable);
  for (std::size_t i = 0; i < at.size(); ++i) {
    const int64_t position = build_path_group(lane, where, tree, at[i]);
    if (group_.size() > static_cast<std::size_t>(max_batch_))
      return invalid_argument(
          "drafting a tree with the dlm proposer needs " + std::to_string(group_.size()) +
          " tokens in one forward for a path, more than decode.max_batch = " +
          std::to_string(max_batch_) + "; lower decode.tree_depth or raise decode.max_batch");
    if (static_cast<std::size_t>(batch_.size()) + group_.size() >
        static_cast<std::size_t>(max_batch_)) {
      RETURN_IF_ERROR(run_expansions(context, lane, probs));
      batch_.clear();
      next_block_id_ = 1;
      parent = -1;  // the blocks that rode along are written now
    }
    // Only the block holding `position` has logits rows.
    const int32_t row =
        batch_.output_rows() + static_cast<int32_t>(position - model_.block_start(position));
    add_group(where.seq, group_, where.writable, position, parent);
    expansions_.push_back({i, row});
  }
  return run_expansions(context, lane, probs);
}

}  // namespace tessera
