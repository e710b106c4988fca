#include "core/plugin/sdk.h"
#include "plugins/cache_static/static_cache_store.h"

TESSERA_PLUGIN(cache, "static", "1.0.0",
               "preallocated arena per sequence, written in place; no allocation after allocate()",
               ::tessera::sdk::kNoOptions, ::tessera::StaticCacheStore)
