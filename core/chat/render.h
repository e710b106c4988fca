// Runs a parsed Program against a context object, producing text. Bounded:
// output, every string and list built, and the number of evaluation steps,
// so a runaway template ends in ResourceExhausted, never a hang.
#pragma once

#include <cstdint>
#include <ctime>
#include <string>

#include "core/chat/ast.h"
#include "core/chat/value.h"
#include "core/status/status.h"

namespace tessera::chat {

struct RenderLimits {
  std::size_t max_output_bytes = 8u << 20;  // also the largest string a template may build
  std::size_t max_items = 1u << 20;         // the longest list a template may build
  uint64_t max_steps = 20'000'000;          // expressions evaluated + statements run
};

// `context` must be an object (or undefined for none); `now` is what
// strftime_now formats.
Result<std::string> render_program(const Program& program, const Value& context, const std::tm& now,
                                   const RenderLimits& limits);

// Checks every filter, test, method and global a program names against what
// builtins.h implements: Unimplemented "origin:line:column: ..." otherwise.
Status check_supported(const Program& program);

}  // namespace tessera::chat
