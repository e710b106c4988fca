// The load of `tessera bench --serve`: concurrent clients streaming
// /v1/completions over loopback, the same bodies to tessera serve and
// llama-server, every text-bearing server-sent event timed as it arrives.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "core/status/status.h"

namespace tessera::cli::serve_bench {

// One streamed completion as the client saw it.
struct StreamTiming {
  double sent = 0;                 // seconds on the load's clock
  std::vector<double> text_times;  // arrival of each event carrying text
  std::string finish_reason;       // of the last event ("length", "stop")
  std::string error;               // transport or HTTP error; empty when fine
};

// Streams one POST /v1/completions (`body` must ask for "stream": true).
// `origin` is the load's clock's zero.
StreamTiming stream_completion(const std::string& host, int port, const std::string& body,
                               std::chrono::steady_clock::time_point origin);

// The request body: a text prompt or token ids, greedy, `max_tokens` to
// the end (ignore_eos: tessera and llama-server both take it).
std::string completion_body(const std::string& prompt, int64_t max_tokens);
std::string completion_body(const std::vector<int32_t>& prompt, int64_t max_tokens);

struct LoadFigures {
  int sessions = 0;
  int64_t tokens = 0;       // generated, all rounds
  double seconds = 0;       // wall time of the rounds
  double tokens_per_s = 0;  // aggregate
  double p50_ms = 0;        // time per output token (between text events)
  double p99_ms = 0;
  double first_token_ms = 0;  // p50 over requests, under this load
  int failed = 0;             // requests that errored or stopped short
  std::string first_error;
};

// `rounds` rounds of `sessions` clients at once, each streaming
// `max_tokens` tokens after prompts[i % size].
LoadFigures run_load(const std::string& host, int port, int sessions, int64_t max_tokens,
                     int rounds, const std::vector<std::string>& prompts);

}  // namespace tessera::cli::serve_bench
