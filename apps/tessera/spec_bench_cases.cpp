#include "apps/tessera/spec_bench_cases.h"

#include <algorithm>
#include <filesystem>
#include <iterator>

#include "core/util/strings.h"
#include "core/util/suggest.h"

namespace tessera::cli {
namespace {

// The text of a [decode] option as the file or a --set gives it ("" if absent).
std::string decode_option(const Config& config, std::string_view name) {
  std::string text;
  for (const ConfigEntry& entry : config.entries()) {
    if (entry.section != "decode" || entry.name != name) continue;
    if (entry.form != ConfigEntry::Form::kValue) {
      text = entry.text;
    } else {
      const auto* value = std::get_if<std::string>(&entry.value);
      text = value ? *value : option_value_to_string(entry.value);
    }
  }
  return text;
}

bool names_draft_model(const Config& config) {
  return !decode_option(config, "draft_model").empty();
}

// The proposer that drafts with decode.draft_model: dlm when the config
// chooses it (the model is a block-diffusion one), else ar_draft; "" when
// the config names no draft model.
std::string model_drafter(const Config& config) {
  if (!names_draft_model(config)) return "";
  return decode_option(config, "proposer") == "dlm" ? "dlm" : "ar_draft";
}

std::vector<std::string> proposer_sets(const Config& config, const std::string& proposer,
                                       int layers) {
  std::vector<std::string> sets = {"decode.proposer=" + proposer};
  std::string drafter = proposer;
  if (proposer == "tree") {
    drafter = decode_option(config, "tree_drafter");
    if (drafter.empty()) {
      drafter = model_drafter(config);
      if (drafter.empty()) drafter = "self_draft";
      sets.push_back("decode.tree_drafter=" + drafter);
    }
  }
  if (drafter == "self_draft" && decode_option(config, "draft_layers").empty())
    sets.push_back("decode.draft_layers=" + std::to_string(std::max(1, layers / 2)));
  return sets;
}

Result<std::string> describe_proposer(const Config& config, const PluginRegistry& registry,
                                      const std::string& name, int layers) {
  if (name == "none") return std::string("-");
  ASSIGN_OR_RETURN(const PluginRecord* record, registry.find("proposer", name));
  ASSIGN_OR_RETURN(const OptionValues options,
                   config.declared_options("decode", {name, record->options()}));
  if (name == "ngram") return "lookup n=" + std::to_string(options.get_int("ngram_n"));
  if (name == "self_draft")
    return std::to_string(options.get_int("draft_layers")) + " of " + std::to_string(layers) +
           " layers";
  if (name == "ar_draft")
    return std::filesystem::path(options.get_string("draft_model")).filename().string();
  if (name == "dlm") {
    const int64_t passes = options.get_int("denoise_passes");
    return std::filesystem::path(options.get_string("draft_model")).filename().string() + ", " +
           std::to_string(passes) + (passes == 1 ? " pass" : " passes") +
           (options.get_string("denoise_blocks") == "in_order" ? ", blocks in order" : "");
  }
  if (name != "tree") return name;
  const std::string drafter = options.get_string("tree_drafter");
  ASSIGN_OR_RETURN(const std::string inner, describe_proposer(config, registry, drafter, layers));
  return drafter + " (" + inner + "), " + std::to_string(options.get_int("tree_tokens")) + " nodes";
}

}  // namespace

Result<std::string> describe_draft(const Config& config, const PluginRegistry& registry,
                                   int layers) {
  return describe_proposer(config, registry, config.get_string("decode.proposer"), layers);
}

std::vector<std::string> default_spec_proposers(const Config& config) {
  const std::string drafter = model_drafter(config);
  if (!drafter.empty()) return {"ngram", "self_draft", drafter, "tree"};
  return {"ngram", "self_draft", "tree"};
}

Result<std::vector<std::string>> parse_spec_proposers(const std::string& text) {
  const std::vector<std::string> known(std::begin(kSpecProposers), std::end(kSpecProposers));
  std::vector<std::string> out;
  for (const std::string& item : split(text, ',')) {
    const std::string name(trim(item));
    if (std::find(known.begin(), known.end(), name) == known.end())
      return invalid_argument("--proposers: unknown proposer '" + name + "'" +
                              did_you_mean_then(name, known) + "choose from " + join(known));
    if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
  }
  if (out.empty()) return invalid_argument("--proposers: name at least one, e.g. ngram,ar_draft");
  return out;
}

std::vector<SpecCase> spec_cases(const Config& config, const std::vector<std::string>& proposers,
                                 int layers) {
  std::vector<SpecCase> cases;
  for (const char* prompt : {"text", "repeated"}) {
    const auto first = cases.size();
    for (const std::string& proposer : proposers) {
      if ((proposer == "ngram") != (std::string(prompt) == "repeated")) continue;
      if (cases.size() == first) cases.push_back({"none", prompt, {"decode.proposer=none"}});
      cases.push_back({proposer, prompt, proposer_sets(config, proposer, layers)});
    }
  }
  return cases;
}

std::vector<int32_t> spec_prompt(const std::string& kind, std::span<const int32_t> text,
                                 int64_t length) {
  const auto take = [&](int64_t n) {
    return text.subspan(1, std::min<std::size_t>(text.size() - 1, static_cast<std::size_t>(n)));
  };
  std::vector<int32_t> prompt = {text.front()};
  const std::span<const int32_t> piece = kind == "repeated" ? take(length / 3) : take(length);
  for (int copy = 0; copy < (kind == "repeated" ? 3 : 1); ++copy)
    prompt.insert(prompt.end(), piece.begin(), piece.end());
  return prompt;
}

}  // namespace tessera::cli
