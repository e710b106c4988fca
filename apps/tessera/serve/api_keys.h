// API keys (server.api_keys) as both transports check them: the credential
// of an Authorization value, and whether it is one of the allowed keys, in
// time that tells a caller nothing about how close its guess came.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace tessera::serve {

// The key of an Authorization value (HTTP header or gRPC metadata) "Bearer
// KEY": the scheme in any case ("bearer", "BEARER"; RFC 9110 makes it
// case-insensitive), then one or more spaces, then the key (trailing spaces
// and tabs dropped). nullopt for another scheme or an empty key.
std::optional<std::string_view> bearer_token(std::string_view authorization);

// Whether `presented` equals one of `allowed`. Every allowed key is compared
// whole, with no early exit on a match or a mismatch, and each comparison
// reads presented.size() bytes whatever the allowed key's length: the time
// depends only on the presented key's length and on how many keys there are.
bool key_allowed(std::string_view presented, std::span<const std::string> allowed);

// Both: whether the Authorization value carries one of `allowed` (false when
// it is no Bearer credential).
bool bearer_key_allowed(std::string_view authorization, std::span<const std::string> allowed);

}  // namespace tessera::serve
