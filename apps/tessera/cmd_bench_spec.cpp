// tessera bench --spec: per proposer, acceptance, tokens per target forward,
// draft cost and the decode speed-up over plain decoding measured in the same
// run (interleaved), beside the speed-up the acceptance and the costs predict.
#include "apps/tessera/cmd_bench_spec.h"

#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "apps/tessera/bench_report.h"
#include "apps/tessera/spec_bench_cases.h"
#include "apps/tessera/sweep/median.h"
#include "apps/tessera/sweep/plugin_options.h"
#include "apps/tessera/sweep/speculative_rates.h"
#include "apps/tessera/sweep/timed_decode.h"
#include "core/engine/engine.h"
#include "core/io/file_lookup.h"
#include "core/io/text_file.h"

namespace tessera::cli {

const char* const kSpecBenchHelp = R"(
--spec: speculative decoding against plain decoding of the same target
  tessera bench --spec --config configs/tok512-ar-1m-spec.toml
  tessera bench --spec --config configs/tok512-ar-1m.toml --set decode.draft_model=stories260K.gguf --proposers ar_draft,tree --csv
  tessera bench --spec --config configs/tok512-ar-1m-dlm.toml --proposers dlm,tree
  tessera bench --spec --config configs/stories260k.toml --model /tmp/110m.gguf --proposers self_draft -n 64 -r 3

Each case continues a prompt with greedy (or the config's) decoding and
times decoding alone: the first step (prefill, a draft model catching up with
the prompt, the first token) is left out. Runs are interleaved, the plain
baseline then each case, --repeat rounds after a warm-up round; figures are
medians. Cases: ngram on the "repeated" prompt (BOS, then the first third of
-p tokens of the text three times: n-gram lookup needs text that repeats);
self_draft (the first half of the target's layers unless decode.draft_layers
is set), ar_draft (needs decode.draft_model), dlm (a block-diffusion
decode.draft_model; by default only where the config's proposer is dlm,
ar_draft then left out: the two read the same key) and tree (over dlm or
ar_draft when a draft model is named, else over self_draft, unless
decode.tree_drafter is set) on the "text" prompt (BOS and the first -p tokens of --text). Each
prompt has its own plain baseline (proposer none). With --spec, -p defaults
to 64 and -n (tokens generated and timed) to 128; --threads takes one count
(default: the config's backend.threads).

columns:
  gamma      draft tokens verified per step, a mean (a chain: decode.draft_tokens,
             fewer where ngram finds no match; a tree: its nodes)
  accept     alpha = accepted / drafted, per drafted token
  acc/step   accepted draft tokens per verification step
  tok/step   tokens emitted per target forward (accepted + 1)
  c          draft cost ratio: proposing time per drafted token / plain time
             per token (the baseline's decode time per token)
  v          verification cost ratio: verifying time per step (the target
             forward over gamma + 1 tokens, acceptance, the commit) / plain
             time per token (the formulas below take 1)
  t/s        decode tokens per second
  speed-up   t/s over the baseline's, measured
  predicted  the speed-up alpha and c predict, by the formula named:
    leviathan  (chains: ngram, self_draft, ar_draft, dlm; Leviathan et al. 2023):
               E = (1 - alpha^(gamma+1)) / (1 - alpha) tokens per step,
               predicted = E / (gamma * c + 1)
    tree       (a tree is not a chain): predicted = tok/step /
               (1 + proposing time per step / plain time per token)
  costed     tok/step / (gamma * c + v): the speed-up the measured drafting
             and verifying times allow. Measured speed-up below it is time
             spent outside the two (scheduling, bookkeeping): the machinery.
  Where v is well above 1 (small models on a CPU, whose weights stay in
  cache, pay per token verified) the measured speed-up falls short of the
  prediction, but not of `costed`.

--csv prints the same figures with more digits, columns model, proposer,
draft, prompt, drafted_per_step (gamma), acceptance, accepted_per_step,
tokens_per_step, draft_cost (c), verify_cost (v), tokens_per_s, speedup,
predicted_speedup, formula, costed_speedup; a figure that means nothing for the baseline
is empty.
)";

namespace {

using sweep::TimedDecode;

constexpr int64_t kSpecPromptTokens = 64;
constexpr int64_t kSpecGenTokens = 128;
// Cache entries past prompt + generated tokens, so that the last step's
// draft still fits (the verifier cuts drafts that would not).
constexpr int64_t kDraftRoom = 16;

struct SpecSettings {
  std::string config_path;
  std::vector<std::string> overrides;
  std::string proposers;  // --proposers, "" for the config's default
  std::string text;       // located
  int64_t prompt_tokens = kSpecPromptTokens;
  int64_t gen_tokens = kSpecGenTokens;
  int repeat = 5;
  bool csv = false;
};

struct CaseRuns {
  SpecCase spec;
  Engine* engine = nullptr;
  std::string draft;  // describe_draft
  std::vector<TimedDecode> runs;
};

struct SpecRow {
  const CaseRuns* runs = nullptr;
  sweep::SpeculativeRates rates;
  double tokens_per_s = 0, speedup = 0, draft_cost = 0, verify_cost = 0, predicted = 0;
  double costed = 0;    // tok/step / (gamma * c + v)
  std::string formula;  // "leviathan" | "tree" | "" (baseline)
};

Result<SpecSettings> read_settings(const po::variables_map& values) {
  SpecSettings s;
  s.config_path = values["config"].as<std::string>();
  if (!values["prompt-tokens"].defaulted()) s.prompt_tokens = values["prompt-tokens"].as<int64_t>();
  if (!values["gen-tokens"].defaulted()) s.gen_tokens = values["gen-tokens"].as<int64_t>();
  s.repeat = values["repeat"].as<int>();
  s.csv = values.count("csv") > 0;
  if (values.count("proposers")) s.proposers = values["proposers"].as<std::string>();
  if (s.prompt_tokens < 3 || s.gen_tokens < 2 || s.repeat < 1)
    return invalid_argument(
        "with --spec, --prompt-tokens must be >= 3, --gen-tokens >= 2, --repeat >= 1");
  ASSIGN_OR_RETURN(s.text, locate_data_file(values["text"].as<std::string>(), "."));
  s.overrides = set_overrides(values);
  if (values.count("model"))
    s.overrides.push_back("model.path=" + values["model"].as<std::string>());
  if (!values["threads"].defaulted()) {
    const std::string threads = values["threads"].as<std::string>();
    if (threads.find(',') != std::string::npos)
      return invalid_argument("with --spec, --threads takes one count, not '" + threads + "'");
    s.overrides.push_back("backend.threads=" + threads);
  }
  s.overrides.push_back("cache.max_tokens=" +
                        std::to_string(s.prompt_tokens + 1 + s.gen_tokens + kDraftRoom));
  return s;
}

// The case's config: the base with its settings, less other proposers' options.
Result<Config> case_config(const Config& base, const PluginRegistry& registry, const SpecCase& c) {
  Config config = base;
  for (const std::string& set : c.sets) RETURN_IF_ERROR(config.apply_override(set));
  return sweep::without_other_plugins_options(config, registry, "decode");
}

// One engine per proposer (the baselines share one), described for the table.
Status make_engines(const Config& base, const PluginRegistry& registry,
                    std::vector<CaseRuns>& cases,
                    std::map<std::string, std::unique_ptr<Engine>>& engines, int layers) {
  for (CaseRuns& c : cases) {
    ASSIGN_OR_RETURN(const Config config, case_config(base, registry, c.spec));
    ASSIGN_OR_RETURN(c.draft, describe_draft(config, registry, layers));
    std::unique_ptr<Engine>& engine = engines[c.spec.proposer];
    if (!engine) {
      ASSIGN_OR_RETURN(engine, Engine::create(config, registry));
    }
    c.engine = engine.get();
  }
  return ok_status();
}

// Interleaved rounds, every case once per round; round 0 warms up.
Status run_rounds(std::vector<CaseRuns>& cases,
                  const std::map<std::string, std::vector<int32_t>>& prompts,
                  const SpecSettings& s) {
  for (int round = 0; round <= s.repeat; ++round) {
    for (CaseRuns& c : cases) {
      auto run = sweep::decode_timed(*c.engine, prompts.at(c.spec.prompt), s.gen_tokens);
      if (!run.ok()) return run.status().with_context("proposer " + c.spec.proposer);
      if (round > 0) c.runs.push_back(std::move(*run));
    }
    std::fprintf(stderr, "bench --spec: round %d of %d done%s\n", round, s.repeat,
                 round == 0 ? " (warm-up)" : "");
  }
  return ok_status();
}

template <typename Measure>
double median_over(const std::vector<TimedDecode>& runs, Measure measure) {
  std::vector<double> values;
  for (const TimedDecode& run : runs) values.push_back(measure(run));
  return sweep::median(values);
}

SpecRow row_of(const CaseRuns& c, const CaseRuns& baseline) {
  const auto speed = [](const TimedDecode& r) { return r.tokens_per_second(); };
  const auto rates = [](const TimedDecode& r) { return sweep::rates_of(r.counters); };
  SpecRow row;
  row.runs = &c;
  row.rates = rates(c.runs.front());  // counts repeat run to run; times are medians
  row.tokens_per_s = median_over(c.runs, speed);
  const double plain_speed = median_over(baseline.runs, speed);
  if (!(plain_speed > 0)) return row;
  const double plain_seconds = 1 / plain_speed;
  row.speedup = row.tokens_per_s / plain_speed;
  row.draft_cost =
      median_over(c.runs,
                  [&](const TimedDecode& r) { return rates(r).propose_seconds_per_drafted; }) /
      plain_seconds;
  row.verify_cost =
      median_over(c.runs, [&](const TimedDecode& r) { return rates(r).verify_seconds_per_step; }) /
      plain_seconds;
  if (c.spec.proposer == "none") return row;
  const double step_cost = row.rates.drafted_per_step * row.draft_cost + row.verify_cost;
  row.costed = step_cost > 0 ? row.rates.tokens_per_step / step_cost : 0;
  if (c.spec.proposer == "tree") {
    row.formula = "tree";
    const double propose = median_over(
        c.runs, [&](const TimedDecode& r) { return rates(r).propose_seconds_per_step; });
    row.predicted = sweep::tree_speedup(row.rates.tokens_per_step, propose, plain_seconds);
  } else {
    row.formula = "leviathan";
    row.predicted =
        sweep::chain_speedup(row.rates.acceptance, row.rates.drafted_per_step, row.draft_cost);
  }
  return row;
}

std::vector<SpecRow> rows_of(const std::vector<CaseRuns>& cases) {
  std::vector<SpecRow> rows;
  const CaseRuns* baseline = nullptr;
  for (const CaseRuns& c : cases) {
    if (c.spec.proposer == "none") baseline = &c;  // each prompt's cases follow its baseline
    rows.push_back(row_of(c, *baseline));
  }
  return rows;
}

// A row's cells; figures that mean nothing for the baseline are `missing`.
TableRow cells_of(const SpecRow& r, const std::string& model, bool csv) {
  const bool drafts = r.runs->spec.proposer != "none";
  const std::string missing = csv ? "" : "-";
  const auto cell = [&](const char* pattern, double value, bool present = true) {
    return present ? format(pattern, value) : missing;
  };
  const sweep::SpeculativeRates& x = r.rates;
  return {model,
          r.runs->spec.proposer,
          drafts ? r.runs->draft : missing,
          r.runs->spec.prompt,
          cell("%.2f", x.drafted_per_step, drafts),
          cell("%.3f", x.acceptance, drafts),
          cell("%.2f", x.accepted_per_step, drafts),
          cell("%.2f", x.tokens_per_step),
          cell(csv ? "%.4f" : "%.3f", r.draft_cost, drafts),
          cell(csv ? "%.4f" : "%.2f", r.verify_cost),
          cell(csv ? "%.3f" : "%.1f", r.tokens_per_s),
          cell(csv ? "%.4f" : "%.2f", r.speedup),
          cell(csv ? "%.4f" : "%.2f", r.predicted, drafts),
          drafts ? r.formula : missing,
          cell(csv ? "%.4f" : "%.2f", r.costed, drafts)};
}

void print_rows(const std::vector<SpecRow>& rows, const std::string& model, bool csv) {
  std::vector<TableRow> cells;
  for (const SpecRow& r : rows) cells.push_back(cells_of(r, model, csv));
  if (csv) {
    write_stdout(
        csv_lines({"model", "proposer", "draft", "prompt", "drafted_per_step", "acceptance",
                   "accepted_per_step", "tokens_per_step", "draft_cost", "verify_cost",
                   "tokens_per_s", "speedup", "predicted_speedup", "formula", "costed_speedup"},
                  cells));
    return;
  }
  write_stdout(
      markdown_table({"model", "proposer", "draft", "prompt", "gamma", "accept", "acc/step",
                      "tok/step", "c", "v", "t/s", "speed-up", "predicted", "formula", "costed"},
                     {false, false, false, false, true, true, true, true, true, true, true, true,
                      true, false, true},
                     cells));
}

Result<std::map<std::string, std::vector<int32_t>>> make_prompts(Engine& engine,
                                                                 const SpecSettings& s) {
  ASSIGN_OR_RETURN(const std::string text, read_text_file(s.text, "text file", 64ull << 20));
  ASSIGN_OR_RETURN(const std::vector<int32_t> tokens, engine.tokenizer().encode(text, true));
  if (static_cast<int64_t>(tokens.size()) < s.prompt_tokens + 1)
    return invalid_argument(s.text + " gives " + std::to_string(tokens.size()) +
                            " tokens, fewer than the prompt's " +
                            std::to_string(s.prompt_tokens + 1));
  std::map<std::string, std::vector<int32_t>> prompts;
  for (const char* kind : {"text", "repeated"})
    prompts[kind] = spec_prompt(kind, tokens, s.prompt_tokens);
  return prompts;
}

Result<std::vector<SpecRow>> measure(const SpecSettings& s, std::vector<CaseRuns>& cases,
                                     std::string& model) {
  ASSIGN_OR_RETURN(const Config base, load_config(s.config_path, s.overrides));
  auto registry = make_registry(&base);
  std::map<std::string, std::unique_ptr<Engine>> engines;
  const SpecCase plain{"none", "text", {"decode.proposer=none"}};
  ASSIGN_OR_RETURN(const Config plain_config, case_config(base, *registry, plain));
  ASSIGN_OR_RETURN(engines["none"], Engine::create(plain_config, *registry));
  Engine& baseline = *engines["none"];
  print_warnings("bench", baseline.warnings());  // a prompt and run past the trained context
  model = std::filesystem::path(baseline.model().path).filename().string();
  const int layers = baseline.model().config.n_layers;
  std::vector<std::string> proposers = default_spec_proposers(base);
  if (!s.proposers.empty()) {
    ASSIGN_OR_RETURN(proposers, parse_spec_proposers(s.proposers));
  }
  for (SpecCase& c : spec_cases(base, proposers, layers)) {
    cases.emplace_back();
    cases.back().spec = std::move(c);
  }
  RETURN_IF_ERROR(make_engines(base, *registry, cases, engines, layers));
  ASSIGN_OR_RETURN(const auto prompts, make_prompts(baseline, s));
  std::fprintf(stderr, "bench --spec: %s, %lld tokens timed after each prompt, %d rounds\n",
               model.c_str(), static_cast<long long>(s.gen_tokens), s.repeat);
  RETURN_IF_ERROR(run_rounds(cases, prompts, s));
  return rows_of(cases);
}

}  // namespace

int run_bench_spec(const po::variables_map& values) {
  auto settings = read_settings(values);
  if (!settings.ok()) return report("bench", settings.status());
  std::vector<CaseRuns> cases;
  std::string model;
  auto rows = measure(*settings, cases, model);
  if (!rows.ok()) return report("bench", rows.status());
  print_rows(*rows, model, settings->csv);
  return 0;
}

}  // namespace tessera::cli
