#include "core/plugin/sdk.h"
#include "plugins/scheduler_continuous/continuous_scheduler.h"

namespace {

constexpr tessera::OptionSpec kContinuousOptions[] = {
    {"max_batch_tokens", tessera::OptionType::kInt, "0",
     "batch rows one step's forward may take, decodes and prefill chunks together (0: "
     "decode.max_batch)",
     0, 1 << 20},
    {"prefill_chunk", tessera::OptionType::kInt, "64",
     "most tokens of one lane's waiting history fed in one step", 1, 1 << 20},
};

}  // namespace

TESSERA_PLUGIN(scheduler, "continuous", "1.0.0",
               "continuous batching: every lane with work in one forward per step, prefill chunks "
               "beside decodes",
               kContinuousOptions, tessera::ContinuousScheduler)
