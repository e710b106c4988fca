#include "core/plugin/sdk.h"
#include "plugins/proposer_tree/tree.h"

namespace {

constexpr tessera::OptionSpec kOptions[] = {
    {"tree_drafter", tessera::OptionType::kString, "\"self_draft\"",
     "the proposer whose next-token distributions grow the tree (its own options are read from "
     "[decode] too)",
     0, 0, "@proposer"},
    {"tree_top_k", tessera::OptionType::kInt, "4",
     "children expanded per node, and frontier nodes kept per level", 1, 64},
    {"tree_depth", tessera::OptionType::kInt, "4", "levels grown below the last token", 1, 64},
    {"tree_tokens", tessera::OptionType::kInt, "16",
     "draft nodes kept after reranking by cumulative log-probability", 1, 4095},
};

}  // namespace

TESSERA_PLUGIN(proposer, "tree", "1.0.0",
               "EAGLE-2 dynamic draft tree over any drafter that can expand (top-k expansion by "
               "cumulative log-probability, reranked to decode.tree_tokens nodes)",
               kOptions, tessera::TreeProposer)
