#include "apps/tessera/sweep/sweep_tasks.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <numeric>

#include "apps/tessera/sweep/median.h"
#include "apps/tessera/sweep/plugin_options.h"
#include "apps/tessera/sweep/position_logits.h"
#include "apps/tessera/sweep/speculative_rates.h"
#include "apps/tessera/sweep/timed_decode.h"
#include "core/engine/perplexity.h"
#include "core/sampling/rng.h"

namespace tessera::sweep {
namespace {

// Softmax of one row in double.
void softmax(const float* row, std::size_t vocab, std::vector<double>& p) {
  p.resize(vocab);
  const double max = *std::max_element(row, row + vocab);
  double sum = 0;
  for (std::size_t v = 0; v < vocab; ++v) sum += (p[v] = std::exp(row[v] - max));
  for (double& x : p) x /= sum;
}

// -log softmax(row)[target], in double.
double nll_of(const float* row, std::size_t vocab, int32_t target) {
  const double max = *std::max_element(row, row + vocab);
  double sum = 0;
  for (std::size_t v = 0; v < vocab; ++v) sum += std::exp(row[v] - max);
  return std::log(sum) + max - row[static_cast<std::size_t>(target)];
}

// speculative: baseline and proposer alternate this many times; tokens/s are
// medians (one run of a small model takes milliseconds on a noisy machine).
constexpr int kSpeculativeRounds = 3;

// The prompt the timed tasks continue: the start of the text.
std::span<const int32_t> speed_prompt(std::span<const int32_t> tokens) {
  return tokens.first(std::min<std::size_t>(tokens.size(), 64));
}

Status check_fits(Engine& engine, int64_t tokens, const std::string& task) {
  if (engine.cache().policy().evicts || tokens <= engine.max_tokens()) return ok_status();
  return resource_exhausted(task + " needs " + std::to_string(tokens) +
                            " tokens in the cache, but cache.max_tokens is " +
                            std::to_string(engine.max_tokens()));
}

}  // namespace

Result<Config> reference_config(const Config& point, int64_t tokens) {
  Config reference = point.without_section("cache");
  RETURN_IF_ERROR(reference.apply_override("cache.plugin=static"));
  RETURN_IF_ERROR(reference.apply_override("cache.max_tokens=" + std::to_string(tokens)));
  RETURN_IF_ERROR(
      reference.apply_override("cache.codec_stage=" + point.get_string("cache.codec_stage")));
  RETURN_IF_ERROR(reference.validate_core());
  return reference;
}

Status measure_perplexity(Engine& engine, std::span<const int32_t> tokens, Metrics& out,
                          const RestorationSettings* restored) {
  RETURN_IF_ERROR(check_fits(engine, static_cast<int64_t>(tokens.size()) - 1, "perplexity"));
  if (restored == nullptr) {
    ASSIGN_OR_RETURN(const PerplexityResult result, score_tokens(engine, tokens));
    out.emplace_back("nll", result.mean_nll);
    out.emplace_back("ppl", std::exp(result.mean_nll));
    return ok_status();
  }
  // Restored decoding scores what its steps attend to.
  const std::span<const int32_t> fed = tokens.first(tokens.size() - 1);
  ASSIGN_OR_RETURN(const std::vector<float> logits, position_logits(engine, fed, restored));
  const auto vocab = static_cast<std::size_t>(engine.model().config.vocab_size);
  double total = 0;
  for (std::size_t i = 0; i < fed.size(); ++i)
    total += nll_of(logits.data() + i * vocab, vocab, tokens[i + 1]);
  const double mean = total / static_cast<double>(fed.size());
  out.emplace_back("nll", mean);
  out.emplace_back("ppl", std::exp(mean));
  return ok_status();
}

Status measure_fidelity(Engine& engine, Engine& reference, std::span<const int32_t> tokens,
                        Metrics& out, const RestorationSettings* restored) {
  RETURN_IF_ERROR(check_fits(engine, static_cast<int64_t>(tokens.size()), "fidelity"));
  ASSIGN_OR_RETURN(const std::vector<float> got, position_logits(engine, tokens, restored));
  ASSIGN_OR_RETURN(const std::vector<float> want, position_logits(reference, tokens, nullptr));
  const auto vocab = static_cast<std::size_t>(engine.model().config.vocab_size);
  // Past the window: queries at t >= sink + window, which a window no longer
  // lets see every position (all positions when the store keeps everything).
  const WindowRule rule = engine.cache().policy().rule;
  const std::size_t past = rule.limits() ? static_cast<std::size_t>(rule.sink + rule.window) : 0;
  std::vector<double> p, q;
  double kl = 0, kl_past = 0, nll_past = 0, ref_nll_past = 0;
  int64_t agree = 0, agree_past = 0, scored_past = 0;
  for (std::size_t row = 0; row < tokens.size(); ++row) {
    const float* a = want.data() + row * vocab;
    const float* b = got.data() + row * vocab;
    softmax(a, vocab, p);
    softmax(b, vocab, q);
    double row_kl = 0;
    for (std::size_t v = 0; v < vocab; ++v)
      if (p[v] > 0) row_kl += p[v] * (std::log(p[v]) - std::log(std::max(q[v], 1e-300)));
    const bool same = std::max_element(a, a + vocab) - a == std::max_element(b, b + vocab) - b;
    kl += row_kl;
    agree += same;
    if (row < past || row + 1 >= tokens.size()) continue;
    kl_past += row_kl;
    agree_past += same;
    nll_past += nll_of(b, vocab, tokens[row + 1]);
    ref_nll_past += nll_of(a, vocab, tokens[row + 1]);
    ++scored_past;
  }
  out.emplace_back("kl", kl / static_cast<double>(tokens.size()));
  out.emplace_back("top1", static_cast<double>(agree) / static_cast<double>(tokens.size()));
  const double past_rows = static_cast<double>(std::max<int64_t>(scored_past, 1));
  out.emplace_back("kl_past_window", kl_past / past_rows);
  out.emplace_back("top1_past_window", static_cast<double>(agree_past) / past_rows);
  out.emplace_back("nll_past_window", nll_past / past_rows);
  out.emplace_back("full_nll_past_window", ref_nll_past / past_rows);

  // K/V relative MSE per layer: the reference's exact K/V through the point's codecs.
  SequenceState seq;
  RETURN_IF_ERROR(reference.begin_sequence(seq));
  std::vector<int32_t> positions(tokens.size());
  std::iota(positions.begin(), positions.end(), 0);
  Status status =
      reference.transformer().forward(reference.cache(), seq.id, tokens, positions).status();
  // The point's codec vectors: one per head, or a token's heads as one.
  const CacheGeometry& geometry = engine.cache().geometry();
  const int layers = geometry.layers;
  const int head_dim = geometry.head_dim;
  const auto width = static_cast<std::size_t>(geometry.vector_width());
  std::vector<double> err(2 * static_cast<std::size_t>(layers)), norm(err.size());
  std::vector<uint8_t> bytes;
  std::vector<float> x(width), back(width);
  for (int l = 0; l < layers && status.ok(); ++l) {
    auto view = reference.cache().view(seq.id, l);
    if (!view.ok()) {
      status = view.status();
      break;
    }
    const Compressor& codec = engine.cache().codec(l);
    bytes.resize(codec.encoded_bytes(1, static_cast<int>(width)));
    for (const KVSegment& s : view->segments)
      for (int kv = 0; kv < 2; ++kv) {
        const Tensor& t = kv == 0 ? s.k : s.v;
        const std::size_t at = 2 * static_cast<std::size_t>(l) + static_cast<std::size_t>(kv);
        for (int i = 0; i < geometry.vectors_per_token(); ++i)
          for (int64_t j = 0; j < s.count; ++j) {
            for (int h = 0; h < geometry.heads_per_vector; ++h)
              std::copy_n(
                  t.f32() + (i * geometry.heads_per_vector + h) * t.stride[0] + j * t.stride[1],
                  head_dim, x.data() + static_cast<std::size_t>(h * head_dim));
            codec.encode(x.data(), 1, static_cast<int>(width), bytes.data());
            codec.decode(bytes.data(), 1, static_cast<int>(width), back.data());
            for (std::size_t d = 0; d < width; ++d) {
              err[at] += (x[d] - back[d]) * static_cast<double>(x[d] - back[d]);
              norm[at] += x[d] * static_cast<double>(x[d]);
            }
          }
      }
  }
  const Status released = reference.end_sequence(seq);
  RETURN_IF_ERROR(status);
  RETURN_IF_ERROR(released);
  for (int kv = 0; kv < 2; ++kv) {
    double e = 0, n = 0;
    for (int l = 0; l < layers; ++l) {
      e += err[2 * static_cast<std::size_t>(l) + static_cast<std::size_t>(kv)];
      n += norm[2 * static_cast<std::size_t>(l) + static_cast<std::size_t>(kv)];
    }
    out.emplace_back(kv == 0 ? "k_rel_mse" : "v_rel_mse", n > 0 ? e / n : 0);
  }
  for (int l = 0; l < layers; ++l)
    for (int kv = 0; kv < 2; ++kv) {
      const std::size_t at = 2 * static_cast<std::size_t>(l) + static_cast<std::size_t>(kv);
      out.emplace_back(std::string(kv == 0 ? "k" : "v") + "_rel_mse_layer" + std::to_string(l),
                       norm[at] > 0 ? err[at] / norm[at] : 0);
    }
  return ok_status();
}

Status measure_recall(Engine& engine, std::span<const int32_t> text, const SweepSettings& settings,
                      Metrics& out, const RestorationSettings* restored) {
  const auto length = static_cast<std::size_t>(settings.recall_length);
  const auto filler = static_cast<std::size_t>(settings.recall_filler);
  const bool random = settings.recall_source == "random";
  // text: the passage, the text after it, the passage again; the control's
  // first passage is the text after the filler. random: random tokens, a
  // filler of text, the same tokens again; the control's are other random
  // tokens. Only the first copy differs between the two.
  const std::size_t need = filler + (random ? 0 : 2 * length);
  if (text.size() < need + 2)
    return invalid_argument("recall needs " + std::to_string(need + 2) +
                            " tokens of text (recall_filler" +
                            (random ? "" : " + 2 * recall_length") + " + 2), the text gives " +
                            std::to_string(text.size()));
  std::vector<int32_t> pool;  // random mode: ordinary pieces (no control, byte or unknown)
  const Vocabulary& vocab = engine.tokenizer().vocabulary();
  for (int32_t id = 0; random && id < vocab.size(); ++id) {
    const auto t = static_cast<std::size_t>(id);
    if (t >= vocab.types.size() || vocab.types[t] == TokenType::kNormal) pool.push_back(id);
  }
  if (random && pool.empty())
    return failed_precondition("recall: the vocabulary has no ordinary tokens to draw");
  Rng rng(static_cast<uint64_t>(settings.seed));
  const auto draw = [&] {
    std::vector<int32_t> tokens(length);
    for (int32_t& t : tokens)
      t = pool[std::min(pool.size() - 1, static_cast<std::size_t>(
                                             rng.uniform() * static_cast<double>(pool.size())))];
    return tokens;
  };
  const auto width = static_cast<std::size_t>(engine.model().config.vocab_size);
  const auto copy_score = [&](std::span<const int32_t> first, std::span<const int32_t> between,
                              std::span<const int32_t> again) -> Result<double> {
    std::vector<int32_t> tokens = {engine.tokenizer().bos()};
    tokens.insert(tokens.end(), first.begin(), first.end());
    tokens.insert(tokens.end(), between.begin(), between.end());
    const std::size_t second = tokens.size();
    tokens.insert(tokens.end(), again.begin(), again.end());
    RETURN_IF_ERROR(check_fits(engine, static_cast<int64_t>(tokens.size()), "recall"));
    ASSIGN_OR_RETURN(const std::vector<float> logits, position_logits(engine, tokens, restored));
    int64_t hits = 0;
    for (std::size_t i = second; i < tokens.size(); ++i) {
      const float* row = logits.data() + (i - 1) * width;
      hits += std::max_element(row, row + width) - row == tokens[i];
    }
    return static_cast<double>(hits) / static_cast<double>(length);
  };
  const std::size_t starts = text.size() - need - 1;
  std::vector<double> recalls, controls, gains;  // per trial
  const auto add_trial = [&](double with_copy, double without) {
    recalls.push_back(with_copy);
    controls.push_back(without);
    gains.push_back(with_copy - without);
  };
  for (int64_t trial = 0; trial < settings.recall_trials; ++trial) {
    const std::size_t start =
        1 +
        std::min(starts - 1, static_cast<std::size_t>(rng.uniform() * static_cast<double>(starts)));
    if (random) {
      const std::vector<int32_t> passage = draw(), other = draw();
      const auto between = text.subspan(start, filler);
      ASSIGN_OR_RETURN(const double with_copy, copy_score(passage, between, passage));
      ASSIGN_OR_RETURN(const double without, copy_score(other, between, passage));
      add_trial(with_copy, without);
    } else {
      const auto passage = text.subspan(start, length);
      const auto between = text.subspan(start + length, filler);
      const auto other = text.subspan(start + length + filler, length);
      ASSIGN_OR_RETURN(const double with_copy, copy_score(passage, between, passage));
      ASSIGN_OR_RETURN(const double without, copy_score(other, between, passage));
      add_trial(with_copy, without);
    }
  }
  // Each mean, then its spread over the trials: the sample standard
  // deviation (NaN for a single trial).
  for (const auto& [name, values] :
       {std::pair{"recall", &recalls}, std::pair{"recall_control", &controls},
        std::pair{"recall_gain", &gains}}) {
    const auto n = static_cast<double>(values->size());
    const double mean = std::accumulate(values->begin(), values->end(), 0.0) / n;
    double squares = 0;
    for (const double v : *values) squares += (v - mean) * (v - mean);
    out.emplace_back(name, mean);
    out.emplace_back(std::string(name) + "_std", values->size() > 1
                                                     ? std::sqrt(squares / (n - 1))
                                                     : std::numeric_limits<double>::quiet_NaN());
  }
  return ok_status();
}

Status measure_memory(Engine& engine, std::span<const int32_t> tokens, Metrics& out) {
  RETURN_IF_ERROR(check_fits(engine, static_cast<int64_t>(tokens.size()), "memory"));
  SequenceState seq;
  RETURN_IF_ERROR(engine.begin_sequence(seq));
  const auto chunk = static_cast<std::size_t>(engine.transformer().max_batch());
  std::vector<int32_t> positions(tokens.size());
  std::iota(positions.begin(), positions.end(), 0);
  // The store's own peak spans earlier tasks; this one's is the most live
  // after any chunk (stores grow or evict on append, never inside a chunk).
  std::size_t most_live = 0;
  Status status;
  for (std::size_t start = 0; start < tokens.size() && status.ok(); start += chunk) {
    const std::size_t n = std::min(chunk, tokens.size() - start);
    status = engine.transformer()
                 .forward(engine.cache(), seq.id, tokens.subspan(start, n),
                          std::span<const int32_t>(positions).subspan(start, n))
                 .status();
    most_live = std::max(most_live, engine.cache().bytes().live);
  }
  const CacheBytes bytes = engine.cache().bytes();
  const Status released = engine.end_sequence(seq);
  RETURN_IF_ERROR(status);
  RETURN_IF_ERROR(released);
  const auto n = static_cast<double>(tokens.size());
  out.emplace_back("kv_bytes_live", static_cast<double>(bytes.live));
  out.emplace_back("kv_bytes_most_live", static_cast<double>(most_live));
  out.emplace_back("kv_bytes_reserved", static_cast<double>(bytes.capacity));
  out.emplace_back("kv_bytes_per_token", static_cast<double>(bytes.live) / n);
  return ok_status();
}

Status measure_speed(Engine& engine, std::span<const int32_t> tokens, int64_t new_tokens,
                     Metrics& out) {
  GenerationRequest request;
  const std::span<const int32_t> prompt = speed_prompt(tokens);
  request.prompt.assign(prompt.begin(), prompt.end());
  request.max_new_tokens = new_tokens;
  request.stop_at_eos = false;
  RETURN_IF_ERROR(
      check_fits(engine, static_cast<int64_t>(request.prompt.size()) + new_tokens + 1, "speed"));
  ASSIGN_OR_RETURN(const GenerationStats stats,
                   engine.generate(request, [](int32_t, int) { return true; }));
  out.emplace_back("prefill_tokens_per_s",
                   stats.prefill_seconds > 0
                       ? static_cast<double>(stats.prompt_tokens) / stats.prefill_seconds
                       : 0);
  out.emplace_back("decode_tokens_per_s",
                   stats.decode_seconds > 0
                       ? static_cast<double>(stats.generated_tokens - 1) / stats.decode_seconds
                       : 0);
  return ok_status();
}

Status measure_speculative(Engine& engine, Engine& plain, std::span<const int32_t> tokens,
                           int64_t new_tokens, Metrics& out) {
  if (engine.sampling().temperature > 0)
    return failed_precondition(
        "speculative compares the tokens with plain decoding's, which needs greedy decoding "
        "(sampling.temperature = 0)");
  const std::span<const int32_t> prompt = speed_prompt(tokens);
  TimedDecode baseline, drafted;
  std::vector<double> plain_speeds, spec_speeds;
  for (int round = 0; round < kSpeculativeRounds; ++round) {
    ASSIGN_OR_RETURN(baseline, decode_timed(plain, prompt, new_tokens));
    ASSIGN_OR_RETURN(drafted, decode_timed(engine, prompt, new_tokens));
    plain_speeds.push_back(baseline.tokens_per_second());
    spec_speeds.push_back(drafted.tokens_per_second());
  }
  const SpeculativeRates rates = rates_of(drafted.counters);
  const auto n = static_cast<std::ptrdiff_t>(new_tokens);
  const bool identical =
      std::equal(drafted.tokens.begin(), drafted.tokens.begin() + n, baseline.tokens.begin());
  const double plain_speed = median(plain_speeds), spec_speed = median(spec_speeds);
  out.emplace_back("acceptance", rates.acceptance);
  out.emplace_back("accepted_per_step", rates.accepted_per_step);
  out.emplace_back("tokens_per_step", rates.tokens_per_step);
  out.emplace_back("draft_forwards_per_step", rates.draft_forwards_per_step);
  out.emplace_back("spec_tokens_per_s", spec_speed);
  out.emplace_back("plain_tokens_per_s", plain_speed);
  out.emplace_back("speedup", plain_speed > 0 ? spec_speed / plain_speed : 0);
  out.emplace_back("identical", identical ? 1 : 0);
  return ok_status();
}

Result<Config> speculative_baseline_config(const Config& point, const PluginRegistry& registry) {
  Config baseline = point;
  RETURN_IF_ERROR(baseline.apply_override("decode.proposer=none"));
  return without_other_plugins_options(baseline, registry, "decode");
}

}  // namespace tessera::sweep
