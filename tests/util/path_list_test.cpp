#include "core/util/path_list.h"

#include <gtest/gtest.h>

#include <cstdlib>

namespace tessera {
namespace {

using Paths = std::vector<std::string>;

TEST(SplitPathList, KeepsOrderAndDropsEmptyEntries) {
  EXPECT_EQ(split_path_list("a:b/c:/d"), (Paths{"a", "b/c", "/d"}));
  EXPECT_EQ(split_path_list("::a::b:"), (Paths{"a", "b"}));
  EXPECT_EQ(split_path_list(""), Paths{});
  EXPECT_EQ(split_path_list(":"), Paths{});
}

TEST(PathListFromEnv, ReadsTheVariableOrNothing) {
  ::unsetenv("TESSERA_TEST_PATH_LIST");
  EXPECT_EQ(path_list_from_env("TESSERA_TEST_PATH_LIST"), Paths{});
  ::setenv("TESSERA_TEST_PATH_LIST", "/x:y", 1);
  EXPECT_EQ(path_list_from_env("TESSERA_TEST_PATH_LIST"), (Paths{"/x", "y"}));
  ::unsetenv("TESSERA_TEST_PATH_LIST");
}

}  // namespace
}  // namespace tessera
