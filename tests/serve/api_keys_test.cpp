// The key checks both transports share: the Bearer scheme in any case, and a
// comparison that finds a key wherever it is in the list and only a whole one.
#include "apps/tessera/serve/api_keys.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace tessera::serve {
namespace {

TEST(ApiKeys, TheBearerSchemeIsTakenInAnyCase) {
  for (const char* value : {"Bearer k1", "bearer k1", "BEARER k1", "Bearer   k1", "Bearer k1 \t"})
    EXPECT_EQ(bearer_token(value), std::optional<std::string_view>("k1")) << value;
  for (const char* value :
       {"", "Bearer", "Bearer ", "Bearer   ", "Bearerk1", "Basic k1", "k1", "Bearer\tk1"})
    EXPECT_EQ(bearer_token(value), std::nullopt) << value;
}

TEST(ApiKeys, OnlyAWholeAllowedKeyPasses) {
  const std::vector<std::string> allowed = {"alpha-key", "beta", "gamma-0123456789"};
  for (const std::string& key : allowed) EXPECT_TRUE(key_allowed(key, allowed)) << key;
  for (const char* wrong : {"", "alpha", "alpha-key-", "alpha-kez", "betabeta", "bet", "Beta",
                            "gamma-012345678", "gamma-0123456789\n"})
    EXPECT_FALSE(key_allowed(wrong, allowed)) << wrong;
  EXPECT_FALSE(key_allowed(std::string("beta\0", 5), allowed));
  // A key that repeats an allowed one (the comparison wraps within it).
  EXPECT_FALSE(key_allowed("betabetabeta", allowed));
  EXPECT_FALSE(key_allowed("beta", std::vector<std::string>{}));
  EXPECT_FALSE(key_allowed("", std::vector<std::string>{""}));  // an empty key never matches
  EXPECT_TRUE(bearer_key_allowed("bearer beta", allowed));
  EXPECT_FALSE(bearer_key_allowed("Basic beta", allowed));
  EXPECT_FALSE(bearer_key_allowed("", allowed));
}

}  // namespace
}  // namespace tessera::serve
