// OpenAI's error objects name the request field at fault in `param`, as the
// OpenAI API does (docs/serving.md): every validation error of a named field,
// the prompt's own errors (token ids outside the vocabulary, a prompt past the
// context), and null where no one field is at fault.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/serve/served.h"

namespace tessera::serve {
namespace {

using nlohmann::json;
using testing_served::Served;

struct Case {
  const char* route;
  std::string body;
  json param;  // the expected `param`: a string, or null
};

TEST(ErrorParam, NamesTheFieldAtFault) {
  Served served;
  ASSERT_TRUE(served.ok());
  auto client = served.client();
  const std::string long_prompt = "[" + [] {
    std::string ids = "1";
    for (int i = 0; i < 600; ++i) ids += ", 5";
    return ids;
  }() + "]";
  const std::vector<Case> cases = {
      {"/v1/completions", "{not json", nullptr},
      {"/v1/completions", "[]", nullptr},
      {"/v1/completions", R"({"max_tokens": 4})", "prompt"},
      {"/v1/completions", R"({"prompt": ""})", "prompt"},
      {"/v1/completions", R"({"prompt": "x", "max_tokens": -3})", "max_tokens"},
      {"/v1/completions", R"({"prompt": "x", "temperature": "hot"})", "temperature"},
      {"/v1/completions", R"({"prompt": "x", "top_p": 2})", "top_p"},
      {"/v1/completions", R"({"prompt": "x", "seed": -1})", "seed"},
      {"/v1/completions", R"({"prompt": "x", "n": 2})", "n"},
      {"/v1/completions", R"({"prompt": "x", "stop": [1]})", "stop"},
      {"/v1/completions", R"({"prompt": "x", "stream": "yes"})", "stream"},
      {"/v1/completions", R"({"prompt": "x", "stream_options": {"include_usage": 1}})",
       "stream_options.include_usage"},
      {"/v1/completions", R"({"prompt": "x", "logprobs": 99})", "logprobs"},
      {"/v1/completions", R"({"prompt": "x", "echo": true})", "echo"},
      {"/v1/completions", R"({"prompt": "x", "model": 7})", "model"},
      // Token ids outside the vocabulary are found when the turn starts.
      {"/v1/completions", R"({"prompt": [1, 2, 999999]})", "prompt"},
      // More tokens than cache.max_tokens = 512 holds.
      {"/v1/completions", R"({"prompt": )" + long_prompt + "}", "prompt"},
      {"/v1/chat/completions", R"({"messages": []})", "messages"},
      {"/v1/chat/completions", R"({"messages": [{"content": "Hi"}]})", "messages[0]"},
      {"/v1/chat/completions", R"({"messages": [{"role": "user", "content": 5}]})",
       "messages[0].content"},
      {"/v1/chat/completions",
       R"({"messages": [{"role": "user", "content": "Hi"}], "logprobs": false, "top_logprobs": 2})",
       "top_logprobs"},
      {"/v1/chat/completions",
       R"({"messages": [{"role": "user", "content": "Hi"}], "tools": [{"type": "function"}]})",
       "tools"},
  };
  for (const Case& c : cases) {
    auto res = client.Post(c.route, c.body, "application/json");
    ASSERT_TRUE(res) << c.body;
    EXPECT_EQ(res->status, 400) << c.body;
    const json error = json::parse(res->body, nullptr, false);
    ASSERT_TRUE(error.contains("error")) << res->body;
    EXPECT_EQ(error["error"]["param"], c.param) << c.body << " -> " << res->body;
  }
}

// A 404 or 405 is about the route, not a field.
TEST(ErrorParam, NullForRoutes) {
  Served served;
  ASSERT_TRUE(served.ok());
  auto client = served.client();
  auto missing = client.Get("/v1/nothing");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
  EXPECT_TRUE(json::parse(missing->body)["error"]["param"].is_null());
}

}  // namespace
}  // namespace tessera::serve
