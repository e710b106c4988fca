// The OpenAI API's request bodies (tessera serve, /v1/completions and
// /v1/chat/completions): arbitrary bytes parsed as either kind (the first
// byte picks), and a response written around arbitrary text.
//
// Oracles: parsing ends in a request, INVALID_ARGUMENT or UNIMPLEMENTED (a
// feature asked for that is not served), never a crash or an exception; an accepted request has
// what the server relies on (a prompt or messages, one choice, sane limits); a response body built
// around any bytes (the model's text may hold invalid UTF-8) is valid JSON.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string_view>

#include "apps/tessera/serve/openai_api.h"

namespace {

void check(bool condition) {
  if (!condition) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  using namespace tessera;
  const bool chat = (data[0] & 1) != 0;
  const std::string_view body(reinterpret_cast<const char*>(data + 1), size - 1);
  auto request = serve::parse_completion_request(body, chat);
  if (!request.ok()) {
    check(request.status().code() == StatusCode::kInvalidArgument ||
          request.status().code() == StatusCode::kUnimplemented);
    return 0;
  }
  if (chat) {
    check(!request->messages.empty());
  } else {
    check(request->prompt_is_tokens ? !request->prompt_tokens.empty() : !request->prompt.empty());
    for (const int32_t id : request->prompt_tokens) check(id >= 0);
  }
  if (request->max_tokens) check(*request->max_tokens >= 0);
  if (request->top_p) check(*request->top_p > 0 && *request->top_p <= 1);
  check(request->stop.size() <= 16);

  serve::CompletionResult result;
  result.id = "cmpl-fuzz";
  result.text.assign(body.substr(0, 256));
  result.finish_reason = "stop";
  const std::string whole = serve::completion_json(result, chat);
  check(!nlohmann::json::parse(whole, nullptr, false).is_discarded());
  const std::string chunk = serve::completion_chunk(result, chat, result.text, "", true);
  check(chunk.rfind("data: ", 0) == 0);
  check(!nlohmann::json::parse(chunk.substr(6), nullptr, false).is_discarded());
  return 0;
}
