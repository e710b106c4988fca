#include "plugins/verifier_restored/restoration_settings.h"

#include <algorithm>

#include "plugins/verifier_restored/restorer_match.h"

namespace tessera {

RestorationSettings RestorationSettings::from(const OptionValues& options) {
  RestorationSettings s;
  s.model_restorer = options.get_string("restorer") == "model";
  s.restorer_model = options.get_string("restorer_model");
  s.linear = options.get_string("projection") == "linear";
  s.projection_file = options.get_string("projection_file");
  s.restore_chunk = options.get_int("restore_chunk");
  return s;
}

Result<RestorationSettings> restoration_settings(const Config& config,
                                                 const PluginRegistry& registry) {
  ASSIGN_OR_RETURN(const PluginRecord* record, registry.find("verifier", "restored"));
  ASSIGN_OR_RETURN(const OptionValues options,
                   config.declared_options("decode", {"verifier 'restored'", record->options()}));
  return RestorationSettings::from(options);
}

Result<RestorerParts> make_restorer_parts(PluginServices& services,
                                          const RestorationSettings& settings) {
  RestorerParts parts;
  ASSIGN_OR_RETURN(const LoadedModel* target, services.target_model());
  if (settings.model_restorer) {
    if (settings.restorer_model.empty())
      return invalid_argument(
          "decode.restorer = \"model\" needs decode.restorer_model (a model file)");
    ASSIGN_OR_RETURN(const LoadedModel* model,
                     services.load_model(settings.restorer_model, "decode.restorer_model"));
    RETURN_IF_ERROR(check_restorer_matches(*target, *model));
    // Its scratch for the chunk it carries, not a whole batch.
    const int chunk = static_cast<int>(
        settings.restore_chunk > 0 ? std::min<int64_t>(settings.restore_chunk, services.max_batch())
                                   : services.max_batch());
    ASSIGN_OR_RETURN(parts.own_restorer, services.make_sized_transformer(*model, chunk));
  }
  if (!settings.linear) {
    parts.projection = std::make_unique<IdentityProjection>();
    return parts;
  }
  if (settings.projection_file.empty())
    return invalid_argument(
        "decode.projection = \"linear\" needs decode.projection_file (written by tessera "
        "fit-projection)");
  ASSIGN_OR_RETURN(
      const std::string path,
      services.find_file(settings.projection_file, "decode.projection_file", "projection file"));
  ASSIGN_OR_RETURN(LinearProjection loaded, LinearProjection::load(path));
  auto linear = std::make_unique<LinearProjection>(std::move(loaded));
  const ModelConfig& c = target->config;
  RETURN_IF_ERROR(
      linear->check_matches(path, {c.n_layers, c.n_kv_heads, c.head_dim, linear->shape().keys}));
  parts.linear = linear.get();
  parts.projection = std::move(linear);
  return parts;
}

Status check_key_stage(const RestorerParts& parts, const RestorationSettings& settings,
                       StoredKeys cache_keys) {
  if (parts.linear == nullptr) return ok_status();
  ProjectionShape expected = parts.linear->shape();
  expected.keys = cache_keys;
  return parts.linear->check_matches(settings.projection_file, expected);
}

}  // namespace tessera
