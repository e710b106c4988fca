// tessera quantize: rewrite a GGUF model with its weights in another type.
#include <sys/stat.h>

#include <cstdio>
#include <map>
#include <optional>
#include <string>

#include "apps/tessera/cli_common.h"
#include "apps/tessera/progress.h"
#include "core/gguf/gguf_quantize.h"
#include "core/io/file_lookup.h"
#include "core/io/output_file.h"

namespace tessera::cli {
namespace {

bool same_file(const std::string& a, const std::string& b) {
  struct stat sa {
  }, sb{};
  return ::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0 && sa.st_dev == sb.st_dev &&
         sa.st_ino == sb.st_ino;
}

}  // namespace

int run_quantize(int argc, char** argv) {
  std::string targets;
  for (const QuantizeTarget& t : quantize_targets())
    targets += (targets.empty() ? "" : "|") + t.name;
  po::options_description options("options");
  options.add_options()("help,h", "show this help")("input", po::value<std::string>()->required(),
                                                    "the GGUF model to read")(
      "output", po::value<std::string>()->required(), "the GGUF file to write")(
      "type", po::value<std::string>()->required(), ("the weight type: " + targets).c_str());
  po::positional_options_description positional;
  positional.add("input", 1).add("output", 1).add("type", 1);
  po::variables_map values;
  int exit_code = 0;
  if (!parse_arguments(argc, argv, options, positional,
                       "usage: tessera quantize IN.gguf OUT.gguf " + targets + R"(

Writes IN's weights in another type, in GGUF's own block layouts, so OUT loads
in tessera and in llama.cpp. Norms stay f32; a matrix whose rows are not whole
blocks of the type stays f16. q4_0 writes output.weight in q6_K, and q4_K_M
puts output.weight and some layers' attn_v and ffn_down in q6_K, as
llama.cpp's llama-quantize does. docs/performance.md has what each costs.
IN is found as a config's model.path is (as given, then TESSERA_MODEL_PATH,
models/, ../shared/models/); OUT is written exactly where it says.)",
                       R"(examples:
  tessera quantize stories260K.gguf /tmp/stories260K-q8_0.gguf q8_0
  tessera quantize /tmp/110m-f16.gguf /tmp/110m-q4_K_M.gguf q4_K_M     # the f16 file of make-model --help
)",
                       values, exit_code))
    return exit_code;

  auto target = find_quantize_target(values["type"].as<std::string>());
  if (!target.ok()) return report("quantize", target.status());
  // IN is found as a config's model.path is; OUT is written where it says.
  auto found = locate_model_file(values["input"].as<std::string>(), ".");
  if (!found.ok()) return report("quantize", found.status());
  const std::string in = *found;
  const std::string out = values["output"].as<std::string>();
  // Checked before the (long) conversion: OUT must be writable, and must not
  // be IN under another name (a link, a relative path).
  auto out_target = resolve_output_path(out, "GGUF file");
  if (!out_target.ok()) return report("quantize", out_target.status());
  if (same_file(in, *out_target))
    return report("quantize", invalid_argument("OUT (" + out + ") is IN (" + in +
                                               "); name another file for the output"));
  std::optional<Progress> progress;  // its total is known at the first tensor
  auto result = quantize_gguf(in, out, *target, [&](int done, int total) {
    if (!progress) progress.emplace("quantizing", "tensors", total);
    progress->update(done);
  });
  if (progress) progress->finish();
  if (!result.ok()) return report("quantize", result.status());
  std::map<std::string, int> per_type;
  for (const QuantizedTensor& t : result->tensors) ++per_type[std::string(dtype_name(t.to))];
  std::string mix;
  for (const auto& [type, count] : per_type)
    mix += (mix.empty() ? "" : ", ") + std::to_string(count) + " " + type;
  std::printf("%s: %zu tensors (%s), %.2f MiB of weights -> %.2f MiB\n", out.c_str(),
              result->tensors.size(), mix.c_str(),
              static_cast<double>(result->bytes_in) / (1024.0 * 1024.0),
              static_cast<double>(result->bytes_out) / (1024.0 * 1024.0));
  return 0;
}

}  // namespace tessera::cli
