#include "core/plugin/sdk.h"
#include "plugins/compressor_int8/int8_codec.h"

TESSERA_PLUGIN(compressor, "int8", "1.0.0",
               "symmetric per-vector int8: fp16 scale max|x|/127 and D int8 codes "
               "(8 bits per element + 16 per vector)",
               ::tessera::sdk::kNoOptions, ::tessera::Int8Codec)
