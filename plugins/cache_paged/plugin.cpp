#include "core/plugin/sdk.h"
#include "plugins/cache_paged/paged_store.h"

namespace {

constexpr tessera::OptionSpec kOptions[] = {
    {"block_size", tessera::OptionType::kInt, "16",
     "entries per block; forked sequences share whole blocks and copy a partial one", 1, 1 << 20},
};

}  // namespace

TESSERA_PLUGIN(cache, "paged", "1.0.0",
               "fixed blocks and a block table per sequence; fork shares blocks (copy-on-write)",
               kOptions, ::tessera::PagedCacheStore)
