#include "core/plugin/sdk.h"
#include "plugins/verifier_ar/ar_verifier.h"

TESSERA_PLUGIN(verifier, "ar", "1.0.0",
               "autoregressive: feeds uncached tokens, samples one token per step with the "
               "configured sampler",
               tessera::sdk::kNoOptions, tessera::ArVerifier)
