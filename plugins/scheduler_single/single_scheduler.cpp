#include "plugins/scheduler_single/single_scheduler.h"

#include <chrono>

#include "core/engine/engine.h"

namespace tessera {
namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

SingleScheduler::SingleScheduler(const OptionValues&) {}

Result<GenerationStats> SingleScheduler::run(Engine& engine, const GenerationRequest& request,
                                             const TokenSink& sink) {
  if (request.prompt.empty())
    return invalid_argument(
        "the prompt has no tokens, and this model has no BOS token to start from; give a prompt");
  const int64_t capacity = engine.max_tokens();
  // A store that evicts runs on past its capacity (its memory stays flat).
  const bool bounded = !engine.cache().policy().evicts;
  if (bounded && static_cast<int64_t>(request.prompt.size()) >= capacity) {
    return resource_exhausted("the prompt has " + std::to_string(request.prompt.size()) +
                              " tokens but the cache holds " + std::to_string(capacity) +
                              " (cache.max_tokens), which leaves no room to generate; raise "
                              "cache.max_tokens (e.g. --set cache.max_tokens=" +
                              std::to_string(request.prompt.size() + 256) +
                              ") or shorten the prompt");
  }

  GenerationStats stats;
  stats.prompt_tokens = static_cast<int64_t>(request.prompt.size());
  SequenceState sequence;
  sequence.tokens = request.prompt;
  RETURN_IF_ERROR(engine.begin_sequence(sequence));

  const int32_t eos = engine.tokenizer().eos();
  const int32_t bos = engine.tokenizer().bos();
  stats.stop_reason = "max_tokens";
  Status status;
  auto start = std::chrono::steady_clock::now();
  while (stats.generated_tokens < request.max_new_tokens) {
    if (bounded && static_cast<int64_t>(sequence.tokens.size()) >= capacity) {
      stats.stop_reason = "cache_full";
      break;
    }
    emitted_.clear();
    status = engine.step(sequence, emitted_);
    if (!status.ok()) break;
    if (stats.steps++ == 0) {
      stats.prefill_seconds = seconds_since(start);
      start = std::chrono::steady_clock::now();
    }
    bool stop = false;
    for (int32_t token : emitted_) {
      // llama2.c-trained models mark the end of a story with BOS; treat it like EOS.
      if (request.stop_at_eos && (token == eos || token == bos)) {
        stats.stop_reason = "eos";
        stop = true;
        break;
      }
      ++stats.generated_tokens;
      if (!sink(token)) {
        stats.stop_reason = "stopped";
        stop = true;
        break;
      }
      if (stats.generated_tokens == request.max_new_tokens) break;
    }
    if (stop) break;
  }
  if (stats.steps > 1) stats.decode_seconds = seconds_since(start);
  const CacheBytes bytes = engine.cache().bytes();
  stats.kv_live_bytes = bytes.live;
  stats.kv_peak_bytes = bytes.peak;
  stats.kv_capacity_bytes = bytes.capacity;
  if (auto info = engine.cache().info(sequence.id); info.ok()) stats.kv_entries = info->stored;
  const Status released = engine.end_sequence(sequence);
  RETURN_IF_ERROR(status);
  RETURN_IF_ERROR(released);
  return stats;
}

}  // namespace tessera
