// The parse-time check that a template names only filters, tests, methods and
// functions the renderer implements, so an unsupported construct is reported
// when the template is loaded, not when a request first reaches it.
#pragma once

#include "core/chat/ast.h"
#include "core/status/status.h"

namespace tessera::chat {

// Unimplemented "origin:line:column: the filter 'x' is not supported ..." for
// the first unknown name; macros the template defines count as functions.
Status check_supported(const Program& program);

}  // namespace tessera::chat
