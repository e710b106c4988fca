#include "plugins/verifier_restored/restorer_match.h"

#include <string>

namespace tessera {
namespace {

Status shape_matches(const LoadedModel& target, const LoadedModel& restorer, const char* what,
                     int target_value, int restorer_value) {
  if (target_value == restorer_value) return ok_status();
  return invalid_argument("decode.restorer_model " + restorer.path + " has " +
                          std::to_string(restorer_value) + " " + what + ", the target " +
                          target.path + " " + std::to_string(target_value) +
                          "; a restorer must produce K/V of the target's shapes");
}

}  // namespace

Status check_restorer_matches(const LoadedModel& target, const LoadedModel& restorer) {
  const ModelConfig& t = target.config;
  const ModelConfig& r = restorer.config;
  RETURN_IF_ERROR(shape_matches(target, restorer, "layers", t.n_layers, r.n_layers));
  RETURN_IF_ERROR(shape_matches(target, restorer, "KV heads", t.n_kv_heads, r.n_kv_heads));
  RETURN_IF_ERROR(shape_matches(target, restorer, "dimensions per head", t.head_dim, r.head_dim));
  const Vocabulary& tv = target.vocab;
  const Vocabulary& rv = restorer.vocab;
  if (rv.size() < tv.size())
    return invalid_argument("decode.restorer_model " + restorer.path + " has a vocabulary of " +
                            std::to_string(rv.size()) + " tokens, fewer than the target's " +
                            std::to_string(tv.size()) + " (" + target.path +
                            "); it must be the target's, extra tokens at the end allowed");
  for (int32_t id = 0; id < tv.size(); ++id) {
    const auto i = static_cast<std::size_t>(id);
    if (rv.pieces[i] != tv.pieces[i])
      return invalid_argument("decode.restorer_model " + restorer.path + ": token " +
                              std::to_string(id) + " is \"" + rv.pieces[i] + "\", the target's (" +
                              target.path + ") \"" + tv.pieces[i] +
                              "\"; the restorer must share the target's tokenizer");
  }
  return ok_status();
}

}  // namespace tessera
