#include "core/plugin/sdk.h"
#include "plugins/proposer_ngram/ngram.h"

namespace {

constexpr tessera::OptionSpec kOptions[] = {
    {"draft_tokens", tessera::OptionType::kInt, "4", "tokens proposed per step, at most", 1, 256},
    {"ngram_n", tessera::OptionType::kInt, "3",
     "length of the suffix looked up earlier in the sequence", 1, 64},
    {"ngram_min", tessera::OptionType::kInt, "1",
     "shortest suffix tried when the longer ones have no earlier occurrence", 1, 64},
};

}  // namespace

TESSERA_PLUGIN(proposer, "ngram", "1.0.0",
               "prompt lookup: proposes what followed the last decode.ngram_n tokens earlier in "
               "the sequence (no model)",
               kOptions, tessera::NgramProposer)
