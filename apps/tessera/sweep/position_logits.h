// Every position's logits for a token sequence fed to a fresh sequence of an
// engine, as its decoding sees them. Plain decoding attends through the
// store's window, so one forward over the chunked sequence gives them. Under
// decode.verifier = "restored" over a store that evicts, each position is one
// restored step (plugins/verifier_restored/restoring_forward.h) with the
// point's restorer and projection: what generation with that config would
// attend to, position by position.
#pragma once

#include <span>
#include <vector>

#include "core/engine/engine.h"
#include "plugins/verifier_restored/restoration_settings.h"

namespace tessera::sweep {

// Row-major [tokens, vocab]. `restored`: the engine's verifier `restored`
// options (null: it decodes plainly). The sequence is released.
Result<std::vector<float>> position_logits(Engine& engine, std::span<const int32_t> tokens,
                                           const RestorationSettings* restored);

}  // namespace tessera::sweep
