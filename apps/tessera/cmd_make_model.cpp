// tessera make-model: a llama model of a real shape with random weights.
#include <cstdio>
#include <optional>
#include <string>

#include "apps/tessera/cli_common.h"
#include "apps/tessera/progress.h"
#include "core/gguf/synthetic_model.h"
#include "core/gguf/vocabulary_writer.h"
#include "core/io/output_file.h"
#include "core/model/model.h"

namespace tessera::cli {
namespace {

int make_vocabulary_only(const po::variables_map& values) {
  const std::string from = values["vocab-from"].as<std::string>();
  const std::string out = values["out"].as<std::string>();
  auto vocab = load_vocabulary(from);
  if (!vocab.ok()) return report("make-model", vocab.status());
  if (const Status s = write_vocabulary_gguf(*vocab, out); !s.ok())
    return report("make-model", s.with_context(from));
  std::printf("%s: vocabulary only, %d tokens, %s%s%s\n", out.c_str(), vocab->size(),
              vocab->kind == VocabularyKind::kBytePairs ? "gpt2 (byte-pair), pre " : "llama",
              vocab->pre.c_str(), vocab->chat_template.empty() ? "" : ", chat template");
  return 0;
}

}  // namespace

int run_make_model(int argc, char** argv) {
  po::options_description options("options");
  options.add_options()("help,h", "show this help")(
      "arch", po::value<std::string>()->default_value("llama"), "architecture (llama only)")(
      "shape", po::value<std::string>(), "110m or 1.1b (or give the five sizes below)")(
      "dim", po::value<int>(), "embedding width")("layers", po::value<int>(), "transformer blocks")(
      "heads", po::value<int>(), "attention heads")("kv-heads", po::value<int>(),
                                                    "key/value heads (grouped-query when fewer)")(
      "ffn", po::value<int>(), "feed-forward width")(
      "dtype", po::value<std::string>()->default_value("f16"),
      "matrix type: f32, f16, bf16, q8_0, q4_0, q4_K, q6_K (rows that are not whole blocks fall "
      "back to q8_0, then f16)")("seed", po::value<uint64_t>()->default_value(1), "random seed")(
      "vocab-from", po::value<std::string>()->required(),
      "GGUF file whose tokenizer is copied (e.g. ../shared/models/ggml-vocab-llama-spm.gguf), or a "
      "Hugging Face tokenizer.json written as GGUF tokenizer keys as llama.cpp's converter "
      "does")("vocab-only",
              "write only the vocabulary (no architecture, no weights), like llama.cpp's "
              "models/ggml-vocab-*.gguf")("out", po::value<std::string>()->required(),
                                          "the GGUF file to write");
  po::positional_options_description positional;
  po::variables_map values;
  int exit_code = 0;
  if (!parse_arguments(
          argc, argv, options, positional,
          R"(usage: tessera make-model --shape 110m|1.1b --dtype TYPE --vocab-from FILE --out FILE.gguf

Writes a llama model of a real shape with random weights (normal, sd 0.02;
norms 1), for speed and memory measurements at sizes the shipped models do
not reach. llama.cpp loads the file too. Its text is noise.)",
          R"(examples:
  tessera make-model --shape 110m --dtype f16 --vocab-from ../shared/models/ggml-vocab-llama-spm.gguf --out 110m-f16.gguf
  tessera make-model --dim 256 --layers 2 --heads 4 --kv-heads 2 --ffn 512 --dtype q4_K \
      --vocab-from ../shared/models/ggml-vocab-llama-spm.gguf --out tiny-q4k.gguf
  tessera make-model --vocab-only --vocab-from path/to/Qwen3/tokenizer.json --out qwen3-vocab.gguf
)",
          values, exit_code))
    return exit_code;
  if (values.count("vocab-only")) return make_vocabulary_only(values);
  if (values["arch"].as<std::string>() != "llama")
    return report("make-model", invalid_argument("--arch: only llama is made"));
  SyntheticModelSpec spec;
  if (values.count("shape")) {
    auto shape = synthetic_shape(values["shape"].as<std::string>());
    if (!shape.ok()) return report("make-model", shape.status());
    spec = *shape;
  }
  const auto take = [&](const char* name, int& field) {
    if (values.count(name)) field = values[name].as<int>();
  };
  take("dim", spec.dim);
  take("layers", spec.layers);
  take("heads", spec.heads);
  take("kv-heads", spec.kv_heads);
  take("ffn", spec.ffn);
  if (spec.kv_heads == 0) spec.kv_heads = spec.heads;
  const auto dtype = dtype_from_name(values["dtype"].as<std::string>());
  if (!dtype)
    return report("make-model", invalid_argument("--dtype: unknown type '" +
                                                 values["dtype"].as<std::string>() + "'"));
  spec.dtype = *dtype;
  spec.seed = values["seed"].as<uint64_t>();
  spec.vocab_from = values["vocab-from"].as<std::string>();
  const std::string out = values["out"].as<std::string>();
  // Checked before the weights are made (seconds to minutes at 1.1b).
  if (auto target = resolve_output_path(out, "GGUF file"); !target.ok())
    return report("make-model", target.status());
  std::optional<Progress> progress;
  const Status status = make_synthetic_model(spec, out, [&](int done, int total) {
    if (!progress) progress.emplace("writing", "tensors", total);
    progress->update(done);
  });
  if (progress) progress->finish();
  if (!status.ok()) return report("make-model", status);
  std::printf("%s: llama, dim %d, %d layers, %d heads (%d kv), ffn %d, %s\n", out.c_str(), spec.dim,
              spec.layers, spec.heads, spec.kv_heads, spec.ffn,
              std::string(dtype_name(spec.dtype)).c_str());
  return 0;
}

}  // namespace tessera::cli
