// Decides which sequences step and when they stop. It never touches K/V bytes:
// it asks the engine to step a sequence and streams what comes out.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/plugin/plugin_object.h"
#include "core/status/status.h"

namespace tessera {

class Engine;

struct GenerationRequest {
  std::vector<int32_t> prompt;  // token ids, BOS included when wanted
  int64_t max_new_tokens = 128;
  bool stop_at_eos = true;
};

struct GenerationStats {
  int64_t prompt_tokens = 0;
  int64_t generated_tokens = 0;
  int64_t steps = 0;
  double prefill_seconds = 0;
  double decode_seconds = 0;
  std::string stop_reason;  // "max_tokens" | "eos" | "cache_full" | "stopped"
  // The cache at the end, before the sequence was released (CacheBytes).
  std::size_t kv_live_bytes = 0;
  std::size_t kv_peak_bytes = 0;
  std::size_t kv_capacity_bytes = 0;
  int64_t kv_entries = 0;  // entries stored at the end
};

// Receives every emitted token as soon as it exists. Returning false stops the
// generation early.
using TokenSink = std::function<bool(int32_t token)>;

class Scheduler : public PluginObject {
 public:
  virtual Result<GenerationStats> run(Engine& engine, const GenerationRequest& request,
                                      const TokenSink& sink) = 0;
};

}  // namespace tessera
