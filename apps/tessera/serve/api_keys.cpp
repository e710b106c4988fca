#include "apps/tessera/serve/api_keys.h"

#include <cstddef>
#include <cstdint>

namespace tessera::serve {
namespace {

// 0 when equal, else not; the loop runs presented.size() times whatever
// `allowed` holds (indices wrap within it), so it reveals neither where the
// first difference is nor the allowed key's length.
unsigned difference(std::string_view presented, std::string_view allowed) {
  if (allowed.empty()) return 1;  // no key is empty: never a match
  unsigned diff = presented.size() == allowed.size() ? 0u : 1u;
  std::size_t j = 0;
  for (const char c : presented) {
    diff |= static_cast<unsigned char>(c) ^ static_cast<unsigned char>(allowed[j]);
    j = j + 1 == allowed.size() ? 0 : j + 1;
  }
  return diff;
}

bool is_space(char c) {
  return c == ' ' || c == '\t';
}

}  // namespace

std::optional<std::string_view> bearer_token(std::string_view authorization) {
  constexpr std::string_view kScheme = "bearer";
  if (authorization.size() <= kScheme.size()) return std::nullopt;
  for (std::size_t i = 0; i < kScheme.size(); ++i) {
    char c = authorization[i];
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if (c != kScheme[i]) return std::nullopt;
  }
  std::string_view rest = authorization.substr(kScheme.size());
  if (rest.front() != ' ') return std::nullopt;  // "Bearerx" is another scheme
  while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
  while (!rest.empty() && is_space(rest.back())) rest.remove_suffix(1);
  if (rest.empty()) return std::nullopt;
  return rest;
}

bool key_allowed(std::string_view presented, std::span<const std::string> allowed) {
  // A match sets no flag a branch could read early: every key is compared.
  unsigned matched = 0;
  for (const std::string& key : allowed) {
    const unsigned diff = difference(presented, key);
    // 1 when diff is 0, else 0, without a branch on it.
    matched |= ((diff | (0u - diff)) >> (sizeof(unsigned) * 8 - 1)) ^ 1u;
  }
  return matched != 0;
}

bool bearer_key_allowed(std::string_view authorization, std::span<const std::string> allowed) {
  const std::optional<std::string_view> presented = bearer_token(authorization);
  return presented && key_allowed(*presented, allowed);
}

}  // namespace tessera::serve
