// Decides which sequences step and when they stop. It never touches K/V bytes:
// it asks the engine to step a sequence and streams what comes out.
#pragma once

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
  std::string stop_reason;  // "max_tokens" | "eos" | "cache_full"
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
