// Splitting and joining the small lists users type: PATH-style directory
// lists, '|'-separated option choices, comma-separated messages.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tessera {

// Without leading and trailing spaces and tabs.
std::string_view trim(std::string_view text);

// "a||b" split on '|' -> {"a", "", "b"}; "" -> {""}.
std::vector<std::string> split(std::string_view text, char separator);

// The shortest decimal text that reads back as exactly this number ("0.1",
// "1e-05", "1"), so messages never show a rounded value.
std::string shortest_decimal(double value);
std::string shortest_decimal(float value);

// "a, b, c"
std::string join(const std::vector<std::string>& items, std::string_view separator = ", ");

}  // namespace tessera
