// The fixed-shape step (design.md §6 item 2; algorithms.md §2.5): the llama
// forward for exactly `block` tokens over a static cache sequence, whose
// shapes never change from one call to the next, as a graph exported for an
// embedded runtime (ExecuTorch, DiffuLex Edge) must be:
//
//   inputs   tokens, positions [block]; the cache [layers, 2, kv_heads,
//            slots, head_dim] (the static store's own memory, every slot);
//            mask [block, slots + block]; keep [slots], insert [slots, block]
//   per layer  q, k, v of the block; attention over every cache slot and the
//            block's keys with the additive mask (Backend::masked_attention);
//            then the branch-free cache update cache * keep + insert x k (and
//            v) (Backend::cache_update)
//   output   logits [block, vocab]
//
// What varies (how much is written, which tokens are real, which are
// written) is data in the mask and in keep/insert (fixed_step_inputs.h), so
// a denoise step (nothing written) and a commit step (the block written) are
// the same function. Everything is allocated by create(), which also runs the
// attention once over an all-hidden mask so the backend sizes its scratch;
// run() allocates nothing. On a device backend the activations, the mask and
// keep/insert live in its memory (written once per run), the cache is the
// static store's device tensor, and the host reads the logits once. It needs a store that keeps a
// sequence as a dense f32 tensor (cache.plugin = "static" with the identity codec) and keys stored
// rotated.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "core/backend/backend.h"
#include "core/cache/checked_cache_store.h"
#include "core/model/batch.h"
#include "core/model/fixed_step_inputs.h"
#include "core/model/model.h"
#include "core/status/status.h"

namespace tessera {

class FixedShapeStep {
 public:
  // `model` and `backend` must outlive the step; `slots` is every cache
  // sequence's capacity (cache.max_tokens).
  static Result<std::unique_ptr<FixedShapeStep>> create(const LoadedModel& model, Backend& backend,
                                                        int block, int64_t slots);

  // One step for `batch` (one sequence, at most block tokens) over its cache
  // sequence: logits [block, vocab] valid until the next call, row i for
  // batch token i (rows past the batch are padding's). The batch's kWriteKv
  // tokens are written in place and become entries of the sequence.
  Result<std::span<const float>> run(CheckedCacheStore& cache, const Batch& batch);

  int block() const { return inputs_.block; }
  // The inputs of the last run, for tests and for exporting them.
  const FixedStepInputs& inputs() const { return inputs_; }

 private:
  FixedShapeStep(const LoadedModel& model, Backend& backend);
  Status allocate(int block, int64_t slots);
  // The step's masked attention over a cache's K and V.
  MaskedAttentionParams attention_over(const Tensor& cache_k, const Tensor& cache_v) const;
  // The layer's attention and cache update over the sequence's dense tensors.
  Status attend(CheckedCacheStore& cache, SequenceId seq, int layer);
  // The mask, keep and insert of inputs_ into the device's memory (a no-op
  // on the host, where the tensors are inputs_' own vectors).
  Status upload_inputs();

  const LoadedModel& model_;
  Backend& backend_;
  FixedStepInputs inputs_;
  std::vector<LayerSpec> specs_;  // what each layer does
  std::vector<std::unique_ptr<Buffer>> buffers_;
  // [block, ...] activations in the backend's memory, allocated once.
  bool device_ = false;
  Tensor x_, xb_, q_, k_, v_, attn_, gate_, up_, logits_;
  // The step's inputs as the ops read them: inputs_' vectors on the host, a
  // device's copies of them.
  Tensor mask_, keep_, insert_;
  std::vector<float> logits_host_;  // device memory only
};

}  // namespace tessera
