// What `tessera bench --spec` runs: the config's target with each proposer,
// the plain baseline, and the prompts they continue.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/config/config.h"
#include "core/plugin/registry.h"
#include "core/status/status.h"

namespace tessera::cli {

inline constexpr const char* kSpecProposers[] = {"ngram", "self_draft", "ar_draft", "dlm", "tree"};

// Prompts: "text" is BOS and the first tokens of the text; "repeated" is BOS
// and a third of them three times, where n-gram lookup finds something.
struct SpecCase {
  std::string proposer;           // "none": the plain baseline of its prompt
  std::string prompt;             // "text" | "repeated"
  std::vector<std::string> sets;  // --set assignments over the config
};

// ngram, self_draft, then the config's model drafter and tree: dlm when the
// config's proposer is dlm (decode.draft_model is then a block-diffusion
// model), else ar_draft when it names a draft model; with neither, tree (over
// self_draft).
std::vector<std::string> default_spec_proposers(const Config& config);

// --proposers "ngram,tree": known names, each once.
Result<std::vector<std::string>> parse_spec_proposers(const std::string& text);

// A baseline per prompt, each followed by the proposers continuing that
// prompt (ngram: "repeated", the others: "text"). self_draft drafts with half
// of the model's `layers` unless the config sets decode.draft_layers; a tree
// grows over the config's model drafter (dlm or ar_draft, as above), else over
// self_draft, unless it sets decode.tree_drafter.
std::vector<SpecCase> spec_cases(const Config& config, const std::vector<std::string>& proposers,
                                 int layers);

// What drafts in a case's config, for the table: "lookup n=3", "3 of 6
// layers", the draft model's file, a tree's drafter and size; "-" for none.
Result<std::string> describe_draft(const Config& config, const PluginRegistry& registry,
                                   int layers);

// The prompt of that kind from the text's tokens (BOS first): `length` tokens
// after BOS.
std::vector<int32_t> spec_prompt(const std::string& kind, std::span<const int32_t> text,
                                 int64_t length);

}  // namespace tessera::cli
