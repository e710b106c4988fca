// tessera fit-projection: fits the `linear` projection of K/V restoration
// (decode.projection = "linear"): the K/V of target and restorer over a text,
// each computed without a cache (every token attending to all before it), and
// per layer, per KV head, K and V apart, the least-squares affine map from
// the restorer's to the target's. docs/kv-restoration.md.
#include <algorithm>
#include <cstdio>
#include <iostream>

#include "apps/tessera/cli_common.h"
#include "core/engine/engine.h"
#include "core/io/file_lookup.h"
#include "core/io/text_file.h"
#include "core/plugin/services.h"
#include "plugins/verifier_restored/projection_fit.h"
#include "plugins/verifier_restored/restoration_settings.h"

namespace tessera::cli {
namespace {

constexpr uint64_t kMaxTextFileBytes = 64ull << 20;

// The K/V of `tokens` under the target and the restorer the config names.
Status capture(Engine& engine, const std::string& restorer_name, const std::vector<int32_t>& tokens,
               HistoryKV& target_kv, HistoryKV& restorer_kv) {
  PluginServices& services = engine.services();
  ASSIGN_OR_RETURN(const LoadedModel* model,
                   services.load_model(restorer_name, "decode.restorer_model"));
  ASSIGN_OR_RETURN(std::unique_ptr<Transformer> restorer, services.make_transformer(*model));
  SequenceState lane;
  RETURN_IF_ERROR(engine.begin_sequence(lane));
  const CacheGeometry geometry = engine.transformer().cache_geometry();
  target_kv.reserve(geometry, static_cast<int64_t>(tokens.size()));
  restorer_kv.reserve(geometry, static_cast<int64_t>(tokens.size()));
  int64_t forwards = 0;
  Status status = target_kv.compute(engine.transformer(), engine.cache(), lane.id, tokens,
                                    engine.transformer().max_batch(), forwards);
  if (status.ok())
    status = restorer_kv.compute(*restorer, engine.cache(), lane.id, tokens, restorer->max_batch(),
                                 forwards);
  const Status ended = engine.end_sequence(lane);
  RETURN_IF_ERROR(status);
  return ended;
}

}  // namespace

int run_fit_projection(int argc, char** argv) {
  po::options_description options("options");
  options.add_options()("help,h", "show this help")(
      "config,c", po::value<std::string>()->required(),
      "TOML config naming the target (model.path) and the restorer (decode.restorer_model)")(
      "text,t", po::value<std::string>()->required(), "UTF-8 text file to capture K/V over")(
      "out,o", po::value<std::string>()->required(), "projection file to write")(
      "max-tokens,n", po::value<int64_t>()->default_value(512),
      "fit on the first N tokens of the text (at most the model's context)")(
      "set,s", po::value<std::vector<std::string>>()->composing(),
      "override a config key (repeatable)");
  add_threads_option(options);
  po::variables_map values;
  int exit_code = 0;
  if (!parse_arguments(argc, argv, options, {},
                       "usage: tessera fit-projection --config FILE --text FILE --out FILE",
                       R"(examples:
  tessera fit-projection --config configs/tok512-ar-1m-restored.toml --text tinystories_train_head.txt --out /tmp/ar1m-from-sdar.kvproj

The text is found as given (absolute, or relative to the current directory),
then in TESSERA_MODEL_PATH, models/, ../shared/models/, data/ and
../shared/data/ next to the repository root; the models as the config names
them. The projection file is written where --out says; a config then names it
in decode.projection_file (found like model.path).

Keys are fitted as the config's cache keeps them (cache.codec_stage); the file
records the stage, and decode.projection_file refuses another. Prints, per
layer, the fit's relative squared error against the identity's (0 exact, 1 no
better than the mean).
)",
                       values, exit_code))
    return exit_code;
  std::vector<std::string> overrides = config_overrides(values);
  for (const char* forced : {"decode.verifier=\"restored\"", "decode.restorer=\"model\"",
                             "decode.projection=\"identity\""})
    overrides.emplace_back(forced);
  auto config = load_config(values["config"].as<std::string>(), overrides);
  if (!config.ok()) return report("fit-projection", config.status());
  auto found = locate_data_file(values["text"].as<std::string>(), ".");
  if (!found.ok()) return report("fit-projection", found.status());
  const std::string text_path = *found;
  auto text = read_text_file(text_path, "text file", kMaxTextFileBytes);
  if (!text.ok()) return report("fit-projection", text.status());
  auto registry = make_registry(&*config);
  auto engine = Engine::create(*config, *registry);
  if (!engine.ok()) return report("fit-projection", engine.status());
  print_warnings("fit-projection", (*engine)->warnings());

  auto tokens = (*engine)->tokenizer().encode(*text, /*add_bos=*/true);
  if (!tokens.ok()) return report("fit-projection", tokens.status().with_context(text_path));
  const int64_t limit = std::min<int64_t>(values["max-tokens"].as<int64_t>(),
                                          (*engine)->model().config.context_length);
  if (limit < 2 || tokens->size() < 2)
    return report("fit-projection",
                  invalid_argument("text file '" + text_path + "' gives too few tokens to fit on"));
  tokens->resize(std::min<std::size_t>(tokens->size(), static_cast<std::size_t>(limit)));

  HistoryKV target_kv, restorer_kv;
  auto settings = restoration_settings(*config, *registry);
  if (!settings.ok()) return report("fit-projection", settings.status());
  const Status captured =
      capture(**engine, settings->restorer_model, *tokens, target_kv, restorer_kv);
  if (!captured.ok()) return report("fit-projection", captured);
  const ModelConfig& mc = (*engine)->model().config;
  const ProjectionShape shape{mc.n_layers, mc.n_kv_heads, mc.head_dim,
                              (*engine)->cache().stored_keys()};
  auto fit = fit_projection(target_kv, restorer_kv, shape);
  if (!fit.ok()) return report("fit-projection", fit.status());
  for (int l = 0; l < mc.n_layers; ++l) {
    const auto i = static_cast<std::size_t>(2 * l);
    std::printf("layer %d: K error %.4f (identity %.4f), V error %.4f (identity %.4f)\n", l,
                fit->relative_error[i], fit->identity_error[i], fit->relative_error[i + 1],
                fit->identity_error[i + 1]);
  }
  const std::string out = values["out"].as<std::string>();
  const Status saved = fit->projection.save(out);
  if (!saved.ok()) return report("fit-projection", saved);
  std::printf("wrote %s: %zu tokens, %d layers x %d KV heads x %d dims, keys %s\n", out.c_str(),
              tokens->size(), mc.n_layers, mc.n_kv_heads, mc.head_dim,
              shape.keys == StoredKeys::kBeforeRope ? "pre_rope" : "post_rope");
  return 0;
}

}  // namespace tessera::cli
