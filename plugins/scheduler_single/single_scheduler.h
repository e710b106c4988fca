// Runs one request at a time to completion: the embedded scheduler.
#pragma once

#include "core/plugin/options.h"
#include "core/schedule/scheduler.h"

namespace tessera {

class SingleScheduler final : public Scheduler {
 public:
  explicit SingleScheduler(const OptionValues& options);
  Result<GenerationStats> run(Engine& engine, const GenerationRequest& request,
                              const TokenSink& sink) override;

 private:
  std::vector<int32_t> emitted_;  // reused across steps
};

}  // namespace tessera
