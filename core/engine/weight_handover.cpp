#include "core/engine/weight_handover.h"

#include <string>

#include "core/io/mapped_file.h"

namespace tessera {

std::vector<Tensor*> weight_tensors(ModelWeights& weights) {
  std::vector<Tensor*> out = {&weights.token_embedding};
  for (LayerWeights& layer : weights.layers)
    for (Tensor* t : {&layer.attn_norm, &layer.wq, &layer.wk, &layer.wv, &layer.wo, &layer.ffn_norm,
                      &layer.w1, &layer.w2, &layer.w3, &layer.bq, &layer.bk, &layer.bv,
                      &layer.q_norm, &layer.k_norm, &layer.post_attn_norm, &layer.post_ffn_norm})
      if (t->data != nullptr) out.push_back(t);  // an architecture's optional tensors
  out.push_back(&weights.output_norm);
  out.push_back(&weights.output);
  if (weights.rope_freqs.data != nullptr) out.push_back(&weights.rope_freqs);
  return out;
}

Status hand_weights_to(Backend& backend, LoadedModel& model) {
  const std::vector<Tensor*> tensors = weight_tensors(model.weights);
  ASSIGN_OR_RETURN(const std::size_t held, backend.adopt_weights(tensors));
  if (held == 0 || !model.file) return ok_status();
  // Taken: no tensor may still point into the file.
  const uint8_t* begin = model.file->data();
  const uint8_t* end = begin + model.file->size();
  for (const Tensor* t : tensors) {
    const auto* p = static_cast<const uint8_t*>(t->data);
    if (p >= begin && p < end)
      return internal_error("adopt_weights reported " + std::to_string(held) +
                            " bytes held but left a tensor in the model file; a backend "
                            "takes every weight or none");
  }
  model.file.reset();
  return ok_status();
}

}  // namespace tessera
