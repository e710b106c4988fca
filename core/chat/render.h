// Runs a parsed Program against a context object, producing text. Bounded:
// output, every string and list built, and the work done (budget.h), so a
// runaway template ends in ResourceExhausted, never a hang.
#pragma once

#include <cstdint>
#include <ctime>
#include <string>

#include "core/chat/ast.h"
#include "core/chat/budget.h"
#include "core/chat/value.h"
#include "core/status/status.h"

namespace tessera::chat {

// `context` must be an object (or undefined for none); `now` is what
// strftime_now formats.
Result<std::string> render_program(const Program& program, const Value& context, const std::tm& now,
                                   const RenderLimits& limits);

}  // namespace tessera::chat
