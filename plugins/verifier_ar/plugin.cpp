#include "core/plugin/sdk.h"
#include "plugins/verifier_ar/ar_verifier.h"

TESSERA_PLUGIN(verifier, "ar", "2.0.0",
               "autoregressive: verifies chain and tree drafts in one target forward (greedy, or "
               "exact speculative sampling with the configured sampler); keeps only the accepted "
               "path's K/V; with no draft, plain decoding",
               tessera::sdk::kNoOptions, tessera::ArVerifier)
