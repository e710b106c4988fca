// Autoregressive verification. With an empty draft (the only kind this
// version accepts) a step feeds the sequence's uncached tokens to the target,
// which appends their K/V, and samples one token from the last logits.
#pragma once

#include "core/decode/verifier.h"
#include "core/plugin/options.h"

namespace tessera {

class ArVerifier final : public Verifier {
 public:
  explicit ArVerifier(const OptionValues& options);
  Status verify(DecodeContext& context, const Draft& draft, std::vector<int32_t>& emitted) override;

 private:
  std::vector<int32_t> positions_;  // reused; grows only with a longer prompt
};

}  // namespace tessera
