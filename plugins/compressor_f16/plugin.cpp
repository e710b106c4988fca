#include "core/plugin/sdk.h"
#include "plugins/compressor_common/half_codec.h"

TESSERA_PLUGIN(compressor, "f16", "1.0.0",
               "K/V as IEEE half floats, clamped to +-65504 (16 bits per element, half "
               "of f32's memory); the CPU attends them as stored",
               ::tessera::sdk::kNoOptions, ::tessera::F16Codec)
