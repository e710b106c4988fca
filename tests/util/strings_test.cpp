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

TEST(ShortestDecimal, ReadsBackExactly) {
  EXPECT_EQ(shortest_decimal(0.1), "0.1");
  EXPECT_EQ(shortest_decimal(1.0), "1");
  EXPECT_EQ(shortest_decimal(1.0000001), "1.0000001");  // never rounded to an allowed value
  EXPECT_EQ(shortest_decimal(1e-05f), "1e-05");
}

TEST(Join, SeparatesItems) {
  EXPECT_EQ(join({"a", "b", "c"}), "a, b, c");
  EXPECT_EQ(join({"x"}, ":"), "x");
  EXPECT_EQ(join({}), "");
}

}  // namespace
}  // namespace tessera
