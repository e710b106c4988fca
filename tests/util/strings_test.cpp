#include "core/util/strings.h"

#include <gtest/gtest.h>

namespace tessera {
namespace {

using Parts = std::vector<std::string>;

TEST(Split, KeepsEmptyParts) {
  EXPECT_EQ(split("a|b|c", '|'), (Parts{"a", "b", "c"}));
  EXPECT_EQ(split("a||b|", '|'), (Parts{"a", "", "b", ""}));
  EXPECT_EQ(split("", '|'), Parts{""});
  EXPECT_EQ(split("no separator", ':'), Parts{"no separator"});
}

TEST(Join, SeparatesItems) {
  EXPECT_EQ(join({"a", "b", "c"}), "a, b, c");
  EXPECT_EQ(join({"x"}, ":"), "x");
  EXPECT_EQ(join({}), "");
}

}  // namespace
}  // namespace tessera
