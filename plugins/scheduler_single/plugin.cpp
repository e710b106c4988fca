#include "core/plugin/sdk.h"
#include "plugins/scheduler_single/single_scheduler.h"

TESSERA_PLUGIN(scheduler, "single", "1.0.0", "one request at a time, to completion (embedded use)",
               tessera::sdk::kNoOptions, tessera::SingleScheduler)
