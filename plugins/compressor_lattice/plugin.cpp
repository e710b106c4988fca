#include "core/plugin/sdk.h"
#include "plugins/compressor_lattice/lattice_codec.h"

TESSERA_PLUGIN(compressor, "lattice", "1.0.0",
               "KakeyaLattice D4/E8 codec: Hadamard rotation, closest lattice point per block, "
               "bit-packed block codes plus fp16 norm and qmax (E8 Q=37: 832 bits at head_dim 128)",
               ::tessera::kLatticeCodecOptions, ::tessera::LatticeCodec)
