#include "core/plugin/sdk.h"
#include "plugins/verifier_restored/restoration_settings.h"
#include "plugins/verifier_restored/restored_verifier.h"

TESSERA_PLUGIN(verifier, "restored", "1.0.0",
               "K/V restoration over an evicting store (sink_window): each step recomputes the "
               "evicted positions' K/V with a cache-free restorer forward over the history and "
               "attends to them with the sinks and window, then drops them; restorer = \"self\" "
               "equals full attention at sinks + window of sustained memory",
               tessera::kRestoredOptions, tessera::RestoredVerifier)
