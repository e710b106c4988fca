#include "core/session/session_metrics.h"

#include <cstdio>
#include <string>

namespace tessera {
namespace {

std::string number(double value) {
  char text[64];
  std::snprintf(text, sizeof text, "%.17g", value);
  return text;
}

void metric(std::string& out, const char* name, const char* type, const char* help,
            const std::string& samples) {
  out +=
      std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n" + samples;
}

template <std::size_t N>
void histogram(std::string& out, const char* name, const char* help, const Histogram<N>& h) {
  std::string samples;
  int64_t cumulative = 0;
  for (std::size_t b = 0; b <= N; ++b) {
    cumulative += h.counts[b];
    const std::string le = b < N ? number(h.bounds[b]) : "+Inf";
    samples +=
        std::string(name) + "_bucket{le=\"" + le + "\"} " + std::to_string(cumulative) + "\n";
  }
  samples += std::string(name) + "_sum " + number(h.sum) + "\n";
  samples += std::string(name) + "_count " + std::to_string(h.count) + "\n";
  metric(out, name, "histogram", help, samples);
}

// One sample line of an unlabelled metric.
std::string one(const char* name, auto value) {
  return std::string(name) + " " + std::to_string(value) + "\n";
}

void prefix_cache_metrics(std::string& out, const PrefixCacheStats& p) {
  metric(out, "tessera_prefix_cache_lookups_total", "counter",
         "Prompts that looked for a cached prefix.",
         one("tessera_prefix_cache_lookups_total", p.lookups));
  metric(out, "tessera_prefix_cache_hits_total", "counter",
         "Prompts that began from a cached prefix.",
         one("tessera_prefix_cache_hits_total", p.hits));
  metric(out, "tessera_prefix_cache_tokens_reused_total", "counter",
         "Prompt tokens whose K/V came from the prefix cache.",
         one("tessera_prefix_cache_tokens_reused_total", p.tokens_reused));
  metric(out, "tessera_prefix_cache_tokens_looked_up_total", "counter",
         "Prompt tokens of the prompts that looked.",
         one("tessera_prefix_cache_tokens_looked_up_total", p.tokens_looked_up));
  metric(out, "tessera_prefix_cache_blocks", "gauge", "Blocks the prefix cache holds now.",
         one("tessera_prefix_cache_blocks", p.blocks));
  metric(out, "tessera_prefix_cache_bytes", "gauge", "K/V bytes of the blocks it holds now.",
         one("tessera_prefix_cache_bytes", p.bytes));
  metric(out, "tessera_prefix_cache_budget_bytes", "gauge", "Its budget (server.prefix_cache_mib).",
         one("tessera_prefix_cache_budget_bytes", p.budget_bytes));
  metric(out, "tessera_prefix_cache_evicted_blocks_total", "counter",
         "Blocks evicted (least recently used) to stay within the budget.",
         one("tessera_prefix_cache_evicted_blocks_total", p.evicted));
}

}  // namespace

std::string prometheus_text(const SessionMetrics& m) {
  std::string out;
  metric(out, "tessera_sessions_live", "gauge", "Sessions open now.",
         one("tessera_sessions_live", m.live_sessions));
  metric(out, "tessera_sessions_created_total", "counter", "Sessions created (forks included).",
         one("tessera_sessions_created_total", m.sessions.created));
  metric(out, "tessera_sessions_closed_total", "counter", "Sessions closed by their owner.",
         one("tessera_sessions_closed_total", m.sessions.closed));
  metric(out, "tessera_sessions_evicted_total", "counter", "Sessions evicted, by reason.",
         "tessera_sessions_evicted_total{reason=\"lru\"} " +
             std::to_string(m.sessions.evicted_lru) +
             "\ntessera_sessions_evicted_total{reason=\"idle_ttl\"} " +
             std::to_string(m.sessions.evicted_ttl) +
             "\ntessera_sessions_evicted_total{reason=\"key_quota\"} " +
             std::to_string(m.sessions.evicted_key_quota) + "\n");
  metric(out, "tessera_invariant_violations_total", "counter",
         "Steps that failed a cache invariant or another check; their sessions were closed.",
         "tessera_invariant_violations_total{kind=\"step_failed\"} " +
             std::to_string(m.sessions.failed) + "\n");
  metric(out, "tessera_tokens_in_total", "counter", "Tokens appended to sessions.",
         one("tessera_tokens_in_total", m.sessions.tokens_in));
  metric(out, "tessera_tokens_out_total", "counter", "Tokens generated and streamed.",
         one("tessera_tokens_out_total", m.sessions.tokens_out));
  metric(out, "tessera_kv_live_bytes", "gauge", "K/V bytes the cache holds now.",
         one("tessera_kv_live_bytes", m.kv_live_bytes));
  metric(out, "tessera_kv_peak_bytes", "gauge", "Most K/V bytes the cache held at once.",
         one("tessera_kv_peak_bytes", m.kv_peak_bytes));
  metric(out, "tessera_steps_total", "counter", "Decode loop steps (one forward each).",
         one("tessera_steps_total", m.steps));
  histogram(out, "tessera_step_seconds", "Wall time of one decode loop step.", m.step_seconds);
  histogram(out, "tessera_batch_lanes", "Lanes (sessions) in one step's forward.", m.batch_lanes);
  if (m.prefix_cache) prefix_cache_metrics(out, *m.prefix_cache);
  return out;
}

}  // namespace tessera
