#include "core/status/status.h"

#include <gtest/gtest.h>

#include "core/util/suggest.h"

namespace tessera {
namespace {

TEST(Status, OkCarriesNoMessage) {
  Status s;
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kOk);
  EXPECT_EQ(s.to_string(), "OK");
}

TEST(Status, ContextIsPrefixed) {
  Status s = not_found("no such file").with_context("loading model.gguf");
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_EQ(s.message(), "loading model.gguf: no such file");
  EXPECT_EQ(s.to_string(), "NOT_FOUND: loading model.gguf: no such file");
}

Result<int> half_of(int x) {
  if (x % 2) return invalid_argument("odd");
  return x / 2;
}

Status quarter(int x, int& out) {
  ASSIGN_OR_RETURN(int half, half_of(x));
  ASSIGN_OR_RETURN(out, half_of(half));
  return ok_status();
}

TEST(Result, PropagatesErrors) {
  int out = 0;
  EXPECT_TRUE(quarter(8, out).ok());
  EXPECT_EQ(out, 2);
  Status s = quarter(6, out);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "odd");
}

TEST(ResultDeathTest, ReadingAnErrorValueAborts) {
  Result<int> r = internal_error("boom");
  EXPECT_DEATH((void)r.value(), "boom");
}

TEST(Suggest, FindsCloseNames) {
  const std::vector<std::string> names = {"lattice", "identity", "int8"};
  EXPECT_EQ(did_you_mean("lattcie", names), "; did you mean 'lattice'?");
  EXPECT_EQ(did_you_mean("zzzzzzzz", names), "");
  // Before a further clause: no "?;" between the question and what follows.
  EXPECT_EQ(did_you_mean_then("lattcie", names), "; did you mean 'lattice'? ");
  EXPECT_EQ(did_you_mean_then("zzzzzzzz", names), "; ");
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
}

}  // namespace
}  // namespace tessera
