// The options of verifier `restored` ([decode]), declared once for the
// plugin, and read the same way by the tools that restore outside decoding
// (`tessera fit-projection`, the sweep's tasks); and the parts they name:
// the restorer's forward and the projection.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/config/config.h"
#include "core/model/transformer.h"
#include "core/plugin/options.h"
#include "core/plugin/registry.h"
#include "core/plugin/services.h"
#include "plugins/verifier_restored/kv_projection.h"
#include "plugins/verifier_restored/linear_projection.h"

namespace tessera {

inline constexpr OptionSpec kRestoredOptions[] = {
    {"restorer", OptionType::kString, "\"self\"",
     "what recomputes the evicted K/V each step: the target itself (exact: equals full "
     "attention), or decode.restorer_model",
     0, 0, "self|model"},
    {"restorer_model", OptionType::kString, "\"\"",
     "the restorer model file (found like model.path) for restorer = \"model\": the target's "
     "layers, KV heads, head size and vocabulary (extra tokens at the end allowed)"},
    {"projection", OptionType::kString, "\"identity\"",
     "what maps the restorer's K/V before the target attends to them: nothing, or the "
     "per-layer, per-KV-head affine maps of decode.projection_file",
     0, 0, "identity|linear"},
    {"projection_file", OptionType::kString, "\"\"",
     "the linear projection's file (tessera fit-projection writes it), found like model.path"},
    {"restore_chunk", OptionType::kInt, "0",
     "positions one restorer forward carries (0: decode.max_batch); bounds the restorer's "
     "activations, not the restored K/V (an exact restorer needs every earlier position's)",
     0, 1 << 20},
};

struct RestorationSettings {
  bool model_restorer = false;  // restorer = "model"
  std::string restorer_model;
  bool linear = false;  // projection = "linear"
  std::string projection_file;
  int64_t restore_chunk = 0;

  static RestorationSettings from(const OptionValues& options);
};

// The [decode] options of verifier `restored` in `config` (defaults for
// what it does not set).
Result<RestorationSettings> restoration_settings(const Config& config,
                                                 const PluginRegistry& registry);

struct RestorerParts {
  std::unique_ptr<Transformer> own_restorer;  // null: the target restores itself
  std::unique_ptr<KVProjection> projection;
  const LinearProjection* linear = nullptr;  // `projection` when it is linear

  Transformer& restorer(Transformer& target) const { return own_restorer ? *own_restorer : target; }
};

// The restorer (checked against the target: restorer_match.h) and the
// projection (its file checked against the target's shapes; the key stage is
// the caller's to check once the cache is known: check_key_stage).
Result<RestorerParts> make_restorer_parts(PluginServices& services,
                                          const RestorationSettings& settings);
Status check_key_stage(const RestorerParts& parts, const RestorationSettings& settings,
                       StoredKeys cache_keys);

}  // namespace tessera
