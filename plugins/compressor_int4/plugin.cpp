#include "core/plugin/sdk.h"
#include "plugins/compressor_int4/int4_codec.h"

TESSERA_PLUGIN(compressor, "int4", "1.0.0",
               "grouped symmetric int4: codes in [-7, 7] two per byte, one fp16 scale per group "
               "(4.5 bits per element at group_size 32)",
               ::tessera::kInt4CodecOptions, ::tessera::Int4Codec)
