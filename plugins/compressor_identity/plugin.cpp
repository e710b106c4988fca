#include "core/plugin/sdk.h"
#include "plugins/compressor_identity/identity_codec.h"

TESSERA_PLUGIN(compressor, "identity", "1.0.0",
               "stores K/V as raw f32 (32 bits per element, lossless)", ::tessera::sdk::kNoOptions,
               ::tessera::IdentityCodec)
