// tessera inspect: what a model file holds.
#include <cstdio>
#include <iostream>

#include "apps/tessera/cli_common.h"
#include "core/io/file_lookup.h"
#include "core/model/model.h"
#include "core/model/weight_check.h"
#include "core/util/strings.h"

namespace tessera::cli {
namespace {

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

}  // namespace

int run_inspect(int argc, char** argv) {
  po::options_description options("options");
  options.add_options()("help,h", "show this help")("model", po::value<std::string>()->required(),
                                                    "model file (.gguf, or llama2.c .bin)")(
      "tokenizer,t", po::value<std::string>(), "llama2.c tokenizer file (for .bin checkpoints)")(
      "metadata,m", "print every metadata key (long arrays are summarised)")(
      "check-weights",
      "read every weight and list tensors holding NaN or infinity (exit 1 if any)");
  po::positional_options_description positional;
  positional.add("model", 1);
  po::variables_map values;
  int exit_code = 0;
  if (!parse_arguments(argc, argv, options, positional,
                       "usage: tessera inspect MODEL [--tokenizer FILE] [--metadata] "
                       "[--check-weights]",
                       R"(examples:
  tessera inspect stories260K.gguf
  tessera inspect stories260K.bin --tokenizer tok512.bin
  tessera inspect ../shared/models/tok512-sdar-1m.gguf --metadata
  tessera inspect stories260K.gguf --check-weights

MODEL and FILE are found as a config's model.path is: as given (absolute, or
relative to the current directory), then in TESSERA_MODEL_PATH, models/ and
../shared/models/ next to the repository root (docs/config.md).
)",
                       values, exit_code))
    return exit_code;

  std::optional<std::string> tokenizer;
  if (values.count("tokenizer")) {
    auto found =
        find_file(values["tokenizer"].as<std::string>(), FileKind::kModel, ".", "tokenizer file");
    if (!found.ok()) return report("inspect", found.status());
    tokenizer = *found;
  }
  auto path = locate_model_file(values["model"].as<std::string>(), ".");
  if (!path.ok()) return report("inspect", path.status());
  auto model = load_model(*path, tokenizer);
  if (!model.ok()) return report("inspect", model.status());
  const ModelConfig& c = model->config;
  std::printf("file:          %s (%s)\n", model->path.c_str(), model->format.c_str());
  std::printf("architecture:  %s%s%s\n", c.architecture.c_str(), c.name.empty() ? "" : ", name ",
              c.name.c_str());
  std::printf("dim %d, hidden %d, layers %d, heads %d, kv heads %d%s, head dim %d\n", c.dim,
              c.hidden_dim, c.n_layers, c.n_heads, c.n_kv_heads,
              c.n_kv_heads < c.n_heads ? " (grouped-query)" : "", c.head_dim);
  std::printf("vocab %d, context %d, rms eps %g, rope theta %g\n", c.vocab_size, c.context_length,
              static_cast<double>(c.rms_eps), static_cast<double>(c.rope_theta));
  std::printf("layers:        %s\n", describe_layers(c).c_str());
  if (c.block_diffusion())
    std::printf("diffusion:     block-diffusion model, block size %d, mask token %d\n",
                c.diffusion_block_size, c.mask_token_id);
  const Vocabulary& v = model->vocab;
  if (v.kind == VocabularyKind::kBytePairs)
    std::printf(
        "tokenizer:     byte-pair BPE (pre %s), %d pieces, %zu merges, bos %d, eos %d, "
        "eot %d, adds bos %s\n",
        v.pre.c_str(), v.size(), v.merges.size(), v.bos_id, v.eos_id, v.eot_id,
        v.add_bos ? "yes" : "no");
  else
    std::printf(
        "tokenizer:     SentencePiece, %d pieces, bos %d, eos %d, unk %d, space prefix %s\n",
        v.size(), v.bos_id, v.eos_id, v.unk_id, v.add_space_prefix ? "yes" : "no");
  std::size_t params = 0, bytes = 0;
  for (const auto& t : model->tensors) {
    std::size_t n = 1;
    for (int64_t d : t.shape) n *= static_cast<std::size_t>(d);
    params += n;
    bytes += dtype_row_bytes(t.dtype, static_cast<int64_t>(n));
  }
  std::printf("tensors:       %zu, %zu parameters, %.2f MiB\n", model->tensors.size(), params,
              static_cast<double>(bytes) / (1024.0 * 1024.0));
  for (const auto& t : model->tensors) {
    std::printf("  %-28s %-4s %s\n", t.name.c_str(), std::string(dtype_name(t.dtype)).c_str(),
                shape_text(t.shape).c_str());
  }
  const bool check_weights = values.count("check-weights") > 0;
  std::vector<NonFiniteTensor> bad;
  if (check_weights) {
    bad = find_non_finite_weights(*model);
    if (bad.empty()) {
      std::printf("weights:       every value is finite\n");
    } else {
      std::printf("weights:       %zu tensors hold NaN or infinity\n", bad.size());
      for (const auto& t : bad)
        std::printf("  %-28s %llu non-finite (first: element %llu = %s)\n", t.name.c_str(),
                    static_cast<unsigned long long>(t.count),
                    static_cast<unsigned long long>(t.first_element),
                    shortest_decimal(t.first_value).c_str());
    }
  }
  if (values.count("metadata")) {
    std::printf("metadata:      %zu keys\n", model->metadata.size());
    for (const auto& [key, value] : model->metadata)
      std::printf("  %s = %s\n", key.c_str(), value.c_str());
  }
  if (check_weights && !bad.empty()) return kExitError;
  return 0;
}

}  // namespace tessera::cli
