#include "core/plugin/sdk.h"
#include "plugins/cache_sink_window/sink_window_store.h"

namespace {

constexpr tessera::OptionSpec kOptions[] = {
    {"sink", tessera::OptionType::kInt, "4",
     "entries kept from the start of the sequence (attention sinks)", 0, 1 << 20},
    {"window", tessera::OptionType::kInt, "256",
     "most recent entries kept; a query at t sees t - window < p <= t and the sinks", 1, 1 << 24},
    {"positions", tessera::OptionType::kString, "\"keep\"",
     "keys keep their positions (keep), or the visible keys take 0..n-1 as StreamingLLM does "
     "(reassign)",
     0, 0, "keep|reassign"},
    {"slack", tessera::OptionType::kInt, "0",
     "entries kept beyond the window, seen by no query, so the last slack + 1 tokens can be "
     "taken back (speculative drafts rejected, a chat turn cut at its end)",
     0, 1 << 20},
};

}  // namespace

TESSERA_PLUGIN(cache, "sink_window", "1.0.0",
               "attention sinks plus a sliding window (StreamingLLM): memory stays flat", kOptions,
               ::tessera::SinkWindowCacheStore)
