#include "core/decode/draft.h"

namespace tessera {

void draft_depths(const Draft& draft, std::vector<int32_t>& depths) {
  depths.resize(draft.tokens.size());
  for (std::size_t i = 0; i < draft.tokens.size(); ++i) {
    const int32_t parent = draft.parents[i];
    depths[i] = parent < 0 ? 1 : depths[static_cast<std::size_t>(parent)] + 1;
  }
}

}  // namespace tessera
