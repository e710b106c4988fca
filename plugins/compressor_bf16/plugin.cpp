#include "core/plugin/sdk.h"
#include "plugins/compressor_common/half_codec.h"

TESSERA_PLUGIN(compressor, "bf16", "1.0.0",
               "K/V as bfloat16 (f32's range, 8 bits of mantissa; 16 bits per element); "
               "the CPU attends them as stored",
               ::tessera::sdk::kNoOptions, ::tessera::Bf16Codec)
