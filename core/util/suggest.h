// "Did you mean" for names a user typed: the closest candidates by edit distance.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tessera {

std::size_t edit_distance(std::string_view a, std::string_view b);

// Candidates within a distance that scales with the name's length, best first.
std::vector<std::string> closest_matches(std::string_view name,
                                         const std::vector<std::string>& candidates,
                                         std::size_t max_results = 3);

// "; did you mean 'x'?" or "" when nothing is close: for the end of a message.
std::string did_you_mean(std::string_view name, const std::vector<std::string>& candidates);

// "; did you mean 'x'? " or "; " when nothing is close: between a message and
// the clause after it ("no plugin 'identiy'" + this + "available: ...").
std::string did_you_mean_then(std::string_view name, const std::vector<std::string>& candidates);

}  // namespace tessera
