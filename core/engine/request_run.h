// One GenerationRequest run to its end on a decode loop (Engine::generate):
// its lanes begun (a prefilled prefix and a lane per branch when it has
// branches), a turn per lane in one group, stepped until every turn ends,
// the lanes ended, and what it took counted.
#pragma once

#include "core/schedule/generation.h"
#include "core/status/status.h"

namespace tessera {

class Engine;

Result<GenerationStats> run_request(Engine& engine, const GenerationRequest& request,
                                    const TokenSink& sink);

}  // namespace tessera
