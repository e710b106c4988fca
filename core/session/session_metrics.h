// What the server reports on /metrics: the sessions' counters, the K/V bytes,
// and histograms of step latency and batch size, written in Prometheus text
// exposition format.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "core/cache/prefix_cache.h"
#include "core/session/session_manager.h"

namespace tessera {

// A Prometheus histogram with fixed upper bounds (the last is +Inf).
template <std::size_t N>
struct Histogram {
  std::array<double, N> bounds{};
  std::array<int64_t, N + 1> counts{};  // per bucket, not cumulative
  double sum = 0;
  int64_t count = 0;
  void observe(double value) {
    std::size_t b = 0;
    while (b < N && value > bounds[b]) ++b;
    ++counts[b];
    sum += value;
    ++count;
  }
};

struct SessionMetrics {
  SessionCounters sessions;
  int64_t live_sessions = 0;
  std::size_t kv_live_bytes = 0;
  std::size_t kv_peak_bytes = 0;
  int64_t steps = 0;
  Histogram<10> step_seconds{
      {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0}, {}, 0, 0};
  Histogram<8> batch_lanes{{1, 2, 4, 8, 16, 32, 64, 128}, {}, 0, 0};
  std::optional<PrefixCacheStats> prefix_cache;  // when server.prefix_cache_mib > 0
};

// The metrics in Prometheus text format (version 0.0.4), names prefixed
// tessera_.
std::string prometheus_text(const SessionMetrics& metrics);

}  // namespace tessera
