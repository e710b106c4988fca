// Turns a parsed pattern into the instructions of the backtracking machine
// (regex_program.h). Counted repeats are unrolled; the program is capped at
// kMaxInstructions. Internal to core/unicode.
#pragma once

#include "core/status/status.h"
#include "core/unicode/regex_parser.h"
#include "core/unicode/regex_program.h"

namespace tessera::unicode::regex {

inline constexpr size_t kMaxInstructions = 1u << 20;

Result<Program> compile_program(Ast ast, std::string_view pattern);

}  // namespace tessera::unicode::regex
