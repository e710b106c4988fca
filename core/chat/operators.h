// Jinja's binary operators with Python's semantics: + - * / // % ** ~,
// comparisons and membership (and/or short-circuit in the renderer).
#pragma once

#include <string_view>

#include "core/chat/budget.h"
#include "core/chat/value.h"
#include "core/status/status.h"

namespace tessera::chat {

// InvalidArgument on a type error, division by zero or integer overflow;
// ResourceExhausted when a repeated or concatenated string or list would pass
// the limits, or the work would pass the budget (a step per item copied or
// compared). Messages carry no location (the renderer adds it).
Result<Value> apply_binary_operator(std::string_view op, const Value& a, const Value& b,
                                    Budget& budget);

}  // namespace tessera::chat
