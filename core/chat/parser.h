// Builds the Program (ast.h) from template source. Syntax errors are
// InvalidArgument and constructs the renderer does not implement (macro, call,
// include, a filter block, ...) are Unimplemented, both "origin:line:column: ...".
#pragma once

#include <string>
#include <string_view>

#include "core/chat/ast.h"
#include "core/status/status.h"

namespace tessera::chat {

Result<Program> parse_template(std::string_view source, std::string origin);

}  // namespace tessera::chat
