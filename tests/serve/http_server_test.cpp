// tessera serve's HTTP API in process, through a real socket: OpenAI's
// bodies, streamed and whole, against the engine's own generation; errors,
// keys, a client that leaves mid-stream, many clients at once.
#include "apps/tessera/serve/http_server.h"

#include "apps/tessera/serve/openai_api.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "core/engine/engine.h"
#include "tests/model/engine_test_util.h"
#include "tests/serve/serve_configs.h"
#include "tests/serve/served.h"

namespace tessera::serve {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

using testing_configs::kConfig;
using testing_configs::kEndless;

using testing_served::Served;
using testing_served::ServedOptions;

// The engine's own greedy text for a prompt.
std::string generated_text(Engine& engine, const std::string& prompt, int64_t tokens) {
  GenerationRequest request;
  request.prompt = *engine.tokenizer().encode(prompt, true);
  request.max_new_tokens = tokens;
  int32_t previous = request.prompt.back();
  std::string text;
  auto stats = engine.generate(request, [&](int32_t token, int) {
    text += engine.tokenizer().decode_token(previous, token);
    previous = token;
    return true;
  });
  EXPECT_TRUE(stats.ok()) << stats.status().to_string();
  return text;
}

// The data lines of a server-sent-event body.
std::vector<std::string> events(const std::string& body) {
  std::vector<std::string> out;
  std::size_t at = 0;
  while ((at = body.find("data: ", at)) != std::string::npos) {
    const std::size_t end = body.find("\n\n", at);
    out.push_back(body.substr(at + 6, end - at - 6));
    at = end;
  }
  return out;
}

TEST(HttpServer, HealthModelsAndUnknownRoutes) {
  Served served;
  ASSERT_TRUE(served.ok());
  auto client = served.client();
  auto health = client.Get("/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  EXPECT_EQ(json::parse(health->body)["status"], "ok");
  auto models = client.Get("/v1/models");
  ASSERT_TRUE(models);
  EXPECT_EQ(json::parse(models->body)["data"][0]["id"], "stories260K.gguf");
  auto missing = client.Get("/v2/nothing");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
  EXPECT_THAT(missing->body, HasSubstr("no route GET /v2/nothing"));
}

TEST(HttpServer, ACompletionIsTheEnginesOwnText) {
  Served served;
  ASSERT_TRUE(served.ok());
  auto client = served.client();
  auto res = client.Post("/v1/completions",
                         R"({"prompt": "Once upon a time", "max_tokens": 20, "temperature": 0})",
                         "application/json");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  const json body = json::parse(res->body);
  EXPECT_EQ(body["object"], "text_completion");
  EXPECT_EQ(body["choices"][0]["text"], generated_text(served.engine(), "Once upon a time", 20));
  EXPECT_EQ(body["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(body["usage"]["completion_tokens"], 20);
  EXPECT_EQ(body["usage"]["prompt_tokens"],
            served.engine().tokenizer().encode("Once upon a time", true)->size());
}

// A served completion on each backend other than the CPU (the strict host
// backend on every build; Vulkan where it runs) is the text `generate` gives
// on the CPU: sessions, continuous batching and the paged store on device
// memory change nothing.
TEST(HttpServer, ACompletionOnEveryBackendIsTheCpusText) {
  auto cpu = tessera::testing::make_engine("stories260K.gguf", kConfig);
  ASSERT_NE(cpu, nullptr);
  const std::string expected = generated_text(*cpu, "Once upon a time", 20);
  int served_on = 0;
  for (const char* backend : {"strict_host", "vulkan"}) {
    const std::string pick = std::string("[backend]\nplugin = \"") + backend + "\"\n";
    // Not built here, or no device: nothing to serve on.
    if (!support::shared_model_engine("stories260K.gguf", kConfig + pick).ok()) continue;
    ServedOptions options;
    options.sampling = pick;
    Served served(options);
    ASSERT_TRUE(served.ok()) << backend;
    auto res = served.client().Post(
        "/v1/completions", R"({"prompt": "Once upon a time", "max_tokens": 20, "temperature": 0})",
        "application/json");
    ASSERT_TRUE(res) << backend;
    ASSERT_EQ(res->status, 200) << backend << ": " << res->body;
    EXPECT_EQ(json::parse(res->body)["choices"][0]["text"], expected) << backend;
    ++served_on;
  }
  if (served_on == 0) GTEST_SKIP() << "no backend other than cpu here";
}

// llama-server's ignore_eos: the turn does not end at the vocabulary's
// end-of-generation tokens (load tests need turns of equal length).
// stories260K never predicts its EOS, so the flag is checked where it is
// read, and a request carrying it runs to max_tokens.
TEST(HttpServer, IgnoreEosIsTaken) {
  for (const auto& [body, expected] : {std::pair{R"({"prompt": "x", "ignore_eos": true})", true},
                                       std::pair{R"({"prompt": "x", "ignore_eos": false})", false},
                                       std::pair{R"({"prompt": "x"})", false}}) {
    auto request = parse_completion_request(body, false);
    ASSERT_TRUE(request.ok()) << request.status().to_string();
    EXPECT_EQ(request->ignore_eos, expected) << body;
  }
  Served served;
  ASSERT_TRUE(served.ok());
  auto client = served.client();
  auto res =
      client.Post("/v1/completions",
                  R"({"prompt": [1], "max_tokens": 480, "temperature": 0, "ignore_eos": true})",
                  "application/json");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  const json body = json::parse(res->body);
  EXPECT_EQ(body["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(body["usage"]["completion_tokens"], 480);
}

TEST(HttpServer, StreamedChatEqualsTheWholeReply) {
  Served served;
  ASSERT_TRUE(served.ok());
  auto client = served.client();
  const std::string request =
      R"({"messages": [{"role": "system", "content": "Tell a story."},
                       {"role": "user", "content": "A cat"}], "max_tokens": 30, "seed": 3)";
  auto whole = client.Post("/v1/chat/completions", request + "}", "application/json");
  ASSERT_TRUE(whole);
  ASSERT_EQ(whole->status, 200) << whole->body;
  const json reply = json::parse(whole->body);
  EXPECT_EQ(reply["object"], "chat.completion");
  EXPECT_EQ(reply["choices"][0]["message"]["role"], "assistant");
  auto streamed =
      client.Post("/v1/chat/completions",
                  request + R"(, "stream": true, "stream_options": {"include_usage": true}})",
                  "application/json");
  ASSERT_TRUE(streamed);
  ASSERT_EQ(streamed->status, 200);
  EXPECT_THAT(streamed->get_header_value("Content-Type"), HasSubstr("text/event-stream"));
  const std::vector<std::string> data = events(streamed->body);
  ASSERT_GE(data.size(), 3u);
  EXPECT_EQ(data.back(), "[DONE]");
  std::string text;
  std::string finish;
  for (std::size_t i = 0; i + 2 < data.size(); ++i) {
    const json chunk = json::parse(data[i]);
    EXPECT_EQ(chunk["object"], "chat.completion.chunk");
    if (i == 0) {
      EXPECT_EQ(chunk["choices"][0]["delta"]["role"], "assistant");
    }
    text += chunk["choices"][0]["delta"].value("content", "");
    if (!chunk["choices"][0]["finish_reason"].is_null())
      finish = chunk["choices"][0]["finish_reason"];
  }
  EXPECT_EQ(text, reply["choices"][0]["message"]["content"]);
  EXPECT_EQ(finish, reply["choices"][0]["finish_reason"]);
  EXPECT_EQ(json::parse(data[data.size() - 2])["usage"]["completion_tokens"],
            reply["usage"]["completion_tokens"]);
}

TEST(HttpServer, AStopStringCutsTheText) {
  Served served;
  ASSERT_TRUE(served.ok());
  const std::string free_text = generated_text(served.engine(), "Once upon a time", 30);
  const std::string stop = free_text.substr(12, 4);
  auto client = served.client();
  const json request = {{"prompt", "Once upon a time"}, {"max_tokens", 30}, {"stop", stop}};
  for (const bool stream : {false, true}) {
    json body = request;
    body["stream"] = stream;
    auto res = client.Post("/v1/completions", body.dump(), "application/json");
    ASSERT_TRUE(res);
    std::string text;
    if (stream) {
      for (const std::string& d : events(res->body))
        if (d != "[DONE]") text += json::parse(d)["choices"][0].value("text", "");
    } else {
      text = json::parse(res->body)["choices"][0]["text"];
    }
    EXPECT_EQ(text, free_text.substr(0, free_text.find(stop))) << (stream ? "streamed" : "whole");
  }
}

TEST(HttpServer, BadRequestsGetOpenAiErrors) {
  Served served;
  ASSERT_TRUE(served.ok());
  auto client = served.client();
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"{not json", "not valid JSON"},
      {"[]", "must be a JSON object"},
      {R"({"max_tokens": 4})", "'prompt' is required"},
      {R"({"prompt": "x", "max_tokens": -3})", "'max_tokens' must be in"},
      {R"({"prompt": "x", "temperature": "hot"})", "'temperature' must be a number"},
      {R"({"prompt": [1, 2, 999999]})", "outside this model's vocabulary"},
      {R"({"prompt": "x", "n": 2})", "'n' must be 1"},
      {R"({"prompt": "x", "ignore_eos": 1})", "'ignore_eos' must be true or false"}};
  for (const auto& [body, message] : cases) {
    auto res = client.Post("/v1/completions", body, "application/json");
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 400) << body;
    const json error = json::parse(res->body, nullptr, false);
    ASSERT_TRUE(error.contains("error")) << res->body;
    EXPECT_THAT(error["error"]["message"].get<std::string>(), HasSubstr(message)) << body;
  }
  auto chat = client.Post("/v1/chat/completions", R"({"messages": []})", "application/json");
  ASSERT_TRUE(chat);
  EXPECT_EQ(chat->status, 400);
  // Still serving.
  EXPECT_EQ(client.Get("/health")->status, 200);
}

// Log-probabilities: one record per generated token, the emitted token the
// most likely when greedy, in OpenAI's two shapes; streamed chunks carry the
// tokens whose text they send, and together they equal the whole answer's.
TEST(HttpServer, LogprobsComeWithEveryTokenWholeAndStreamed) {
  Served served;
  ASSERT_TRUE(served.ok());
  auto client = served.client();
  auto res = client.Post(
      "/v1/completions",
      R"({"prompt": "Once upon a time", "max_tokens": 12, "temperature": 0, "logprobs": 3})",
      "application/json");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  const json body = json::parse(res->body);
  const json& lp = body["choices"][0]["logprobs"];
  ASSERT_EQ(lp["tokens"].size(), 12u) << lp.dump();
  ASSERT_EQ(lp["token_logprobs"].size(), 12u);
  ASSERT_EQ(lp["top_logprobs"].size(), 12u);
  std::string joined;
  for (std::size_t i = 0; i < 12; ++i) {
    EXPECT_EQ(lp["text_offset"][i].get<int64_t>(), static_cast<int64_t>(joined.size()));
    const std::string token = lp["tokens"][i].get<std::string>();
    joined += token;
    const double logprob = lp["token_logprobs"][i].get<double>();
    EXPECT_LE(logprob, 0.0);
    const json& top = lp["top_logprobs"][i];
    EXPECT_GE(top.size(), 1u);
    EXPECT_LE(top.size(), 3u);
    ASSERT_TRUE(top.contains(token)) << top.dump();
    for (const auto& [text, value] : top.items()) EXPECT_LE(value.get<double>(), logprob + 1e-6);
  }
  EXPECT_EQ(joined, body["choices"][0]["text"].get<std::string>());

  const std::string chat_body =
      R"({"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 10, "temperature": 0,
          "logprobs": true, "top_logprobs": 2)";
  auto whole = client.Post("/v1/chat/completions", chat_body + "}", "application/json");
  ASSERT_TRUE(whole);
  ASSERT_EQ(whole->status, 200) << whole->body;
  const json content = json::parse(whole->body)["choices"][0]["logprobs"]["content"];
  ASSERT_EQ(content.size(), 10u);
  for (const json& entry : content) {
    ASSERT_EQ(entry["top_logprobs"].size(), 2u);
    EXPECT_EQ(entry["top_logprobs"][0]["token"], entry["token"]);
    EXPECT_EQ(entry["top_logprobs"][0]["logprob"], entry["logprob"]);
    std::string bytes;
    for (const json& b : entry["bytes"]) bytes += static_cast<char>(b.get<int>());
    EXPECT_EQ(bytes, entry["token"].get<std::string>());
  }
  auto streamed =
      client.Post("/v1/chat/completions", chat_body + R"(, "stream": true})", "application/json");
  ASSERT_TRUE(streamed);
  ASSERT_EQ(streamed->status, 200);
  json gathered = json::array();
  for (const std::string& event : events(streamed->body)) {
    if (event == "[DONE]") break;
    const json chunk = json::parse(event);
    const json& logprobs = chunk["choices"][0]["logprobs"];
    if (logprobs.is_null()) continue;
    for (const json& entry : logprobs["content"]) gathered.push_back(entry);
  }
  EXPECT_EQ(gathered, content);
  // Without asking, nothing.
  auto plain =
      client.Post("/v1/completions", R"({"prompt": "Once", "max_tokens": 2})", "application/json");
  ASSERT_TRUE(plain);
  EXPECT_TRUE(json::parse(plain->body)["choices"][0]["logprobs"].is_null());
}

TEST(HttpServer, LogprobAndPenaltyFieldsAreChecked) {
  for (const auto& [body, chat, message] :
       {std::tuple{R"({"prompt": "x", "logprobs": 21})", false, "'logprobs' must be at most 20"},
        std::tuple{R"({"prompt": "x", "logprobs": true})", false, "'logprobs' must be an integer"},
        std::tuple{R"({"messages": [{"role": "user", "content": "x"}], "logprobs": 3})", true,
                   "'logprobs' must be true or false"},
        std::tuple{R"({"messages": [{"role": "user", "content": "x"}], "top_logprobs": 2})", true,
                   "'top_logprobs' needs 'logprobs': true"},
        std::tuple{R"({"prompt": "x", "presence_penalty": 2.5})", false,
                   "'presence_penalty' must be in"},
        std::tuple{R"({"prompt": "x", "frequency_penalty": "high"})", false,
                   "'frequency_penalty' must be a number"}}) {
    auto request = parse_completion_request(body, chat);
    ASSERT_FALSE(request.ok()) << body;
    EXPECT_EQ(request.status().code(), StatusCode::kInvalidArgument) << body;
    EXPECT_THAT(request.status().message(), HasSubstr(message)) << body;
  }
  auto taken = parse_completion_request(
      R"({"messages": [{"role": "user", "content": "x"}], "logprobs": false, "top_logprobs": 0,
          "presence_penalty": -1.5, "frequency_penalty": 0.5})",
      true);
  ASSERT_TRUE(taken.ok()) << taken.status().to_string();
  EXPECT_FALSE(taken->logprobs.has_value());
  EXPECT_EQ(taken->presence_penalty, -1.5);
  EXPECT_EQ(taken->frequency_penalty, 0.5);
}

// A frequency penalty makes a greedy answer repeat itself less; the same
// request gives the same answer (the penalty is deterministic).
TEST(HttpServer, PenaltiesChangeTheGreedyAnswer) {
  Served served;
  ASSERT_TRUE(served.ok());
  auto client = served.client();
  const auto answer = [&](const std::string& extra) {
    auto res = client.Post(
        "/v1/completions",
        R"({"prompt": "Once upon a time", "max_tokens": 40, "temperature": 0)" + extra + "}",
        "application/json");
    EXPECT_TRUE(res);
    EXPECT_EQ(res->status, 200) << res->body;
    return json::parse(res->body)["choices"][0]["text"].get<std::string>();
  };
  const std::string plain = answer("");
  const std::string penalised = answer(R"(, "frequency_penalty": 1.5, "presence_penalty": 0.5)");
  EXPECT_NE(penalised, plain);
  EXPECT_EQ(answer(R"(, "frequency_penalty": 1.5, "presence_penalty": 0.5)"), penalised);
  EXPECT_EQ(answer(R"(, "frequency_penalty": 0)"), plain);
}

TEST(HttpServer, KeysAreRequiredWhenSet) {
  Served served({"secret"});
  ASSERT_TRUE(served.ok());
  auto client = served.client();
  const std::string body = R"({"prompt": "Once", "max_tokens": 3})";
  auto without = client.Post("/v1/completions", body, "application/json");
  ASSERT_TRUE(without);
  EXPECT_EQ(without->status, 401);
  client.set_bearer_token_auth("wrong");
  EXPECT_EQ(client.Post("/v1/completions", body, "application/json")->status, 401);
  client.set_bearer_token_auth("secret");
  EXPECT_EQ(client.Post("/v1/completions", body, "application/json")->status, 200);
}

TEST(HttpServer, AClientThatLeavesMidStreamFreesItsSession) {
  Served served({}, "", kEndless);
  ASSERT_TRUE(served.ok());
  auto client = served.client();
  httplib::Request req;
  req.method = "POST";
  req.path = "/v1/completions";
  req.body = R"({"prompt": "Once upon a time", "max_tokens": 16000000, "stream": true})";
  req.set_header("Content-Type", "application/json");
  int chunks = 0;
  req.content_receiver = [&](const char*, std::size_t, uint64_t, uint64_t) {
    return ++chunks < 3;  // leave after a few
  };
  auto res = client.send(req);
  EXPECT_GE(chunks, 3);
  // The session goes away once the loop sees the reader gone (its turn would
  // run for hours otherwise).
  int64_t live = -1;
  for (int tries = 0; tries < 3000 && live != 0; ++tries) {
    live = served.runtime().metrics().live_sessions;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(live, 0);
  auto next =
      client.Post("/v1/completions", R"({"prompt": "Once", "max_tokens": 3})", "application/json");
  ASSERT_TRUE(next);
  EXPECT_EQ(next->status, 200);
}

// Clients connecting at the same instant (a load test's first round) are all
// served: the listen queue is wider than Debian cpp-httplib's 5.
TEST(HttpServer, ABurstOfConnectionsIsServed) {
  Served served;
  ASSERT_TRUE(served.ok());
  constexpr int kClients = 64;  // server.max_sessions: one session each
  std::atomic<int> ready{0}, served_ok{0};
  std::vector<std::thread> clients;
  for (int i = 0; i < kClients; ++i)
    clients.emplace_back([&] {
      auto client = served.client();
      ++ready;
      while (ready.load() < kClients) std::this_thread::yield();
      const std::string body = R"({"prompt": "Once", "max_tokens": 8, "stream": true})";
      if (auto res = client.Post("/v1/completions", body, "application/json");
          res && res->status == 200 && res->body.find("[DONE]") != std::string::npos)
        ++served_ok;
    });
  for (std::thread& t : clients) t.join();
  EXPECT_EQ(served_ok.load(), kClients);
}

TEST(HttpServer, ManyClientsAtOnceEachGetTheirOwnText) {
  Served served({}, "[sampling]\ntemperature = 0.8\n");
  ASSERT_TRUE(served.ok());
  constexpr int kClients = 8;
  const auto ask = [&](int c) {
    auto client = served.client();
    const json body = {
        {"prompt", c % 2 ? "Once upon a time" : "The dog"}, {"max_tokens", 10 + c}, {"seed", c}};
    auto res = client.Post("/v1/completions", body.dump(), "application/json");
    return res && res->status == 200
               ? json::parse(res->body)["choices"][0]["text"].get<std::string>()
               : std::string("error");
  };
  std::vector<std::string> together(kClients);
  std::vector<std::thread> threads;
  for (int c = 0; c < kClients; ++c) threads.emplace_back([&, c] { together[c] = ask(c); });
  for (std::thread& t : threads) t.join();
  for (int c = 0; c < kClients; ++c) EXPECT_EQ(together[c], ask(c)) << "client " << c;
  // A completion's session is closed when its handler lets go of it
  // (~Completion), which may be just after the answer reached the client:
  // read the gauge until it settles (at most 5 s).
  std::string metrics;
  for (int tries = 0; tries < 500; ++tries) {
    metrics = served.client().Get("/metrics")->body;
    if (metrics.find("tessera_sessions_live 0\n") != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_THAT(metrics, HasSubstr("tessera_sessions_created_total " + std::to_string(2 * kClients)));
  EXPECT_THAT(metrics, HasSubstr("tessera_sessions_live 0"));
}

// A chat client resends its whole conversation each turn: with the prefix
// cache the server computes only the new turn, reports the rest as
// usage.prompt_tokens_details.cached_tokens and in /metrics, and answers
// exactly as without it.
TEST(HttpServer, AResentConversationReusesItsPrefixAndAnswersTheSame) {
  ServedOptions with_cache;
  with_cache.prefix_cache_bytes = std::size_t{16} << 20;
  Served cached(with_cache);
  Served plain;
  ASSERT_TRUE(cached.ok());
  ASSERT_TRUE(plain.ok());
  json messages = json::array(
      {{{"role", "system"}, {"content", "You tell short stories about a girl named Lily."}},
       {{"role", "user"}, {"content", "Tell me about her red ball and the big tree."}}});
  for (int turn = 0; turn < 3; ++turn) {
    const json request = {{"messages", messages}, {"max_tokens", 16}, {"temperature", 0}};
    auto a = cached.client().Post("/v1/chat/completions", request.dump(), "application/json");
    auto b = plain.client().Post("/v1/chat/completions", request.dump(), "application/json");
    ASSERT_TRUE(a && b);
    ASSERT_EQ(a->status, 200) << a->body;
    ASSERT_EQ(b->status, 200) << b->body;
    const json with = json::parse(a->body), without = json::parse(b->body);
    const std::string reply = with["choices"][0]["message"]["content"];
    EXPECT_EQ(reply, without["choices"][0]["message"]["content"]) << "turn " << turn;
    EXPECT_EQ(with["usage"]["prompt_tokens"], without["usage"]["prompt_tokens"]);
    EXPECT_EQ(without["usage"]["prompt_tokens_details"]["cached_tokens"], 0);
    const int64_t reused = with["usage"]["prompt_tokens_details"]["cached_tokens"];
    if (turn == 0) {
      EXPECT_EQ(reused, 0);
    } else {
      EXPECT_GE(reused, 32) << "the conversation before, in blocks of 16";
    }
    EXPECT_LT(reused, with["usage"]["prompt_tokens"].get<int64_t>());
    messages.push_back({{"role", "assistant"}, {"content", reply}});
    messages.push_back({{"role", "user"}, {"content", "And then what happened?"}});
  }
  const std::string metrics = cached.client().Get("/metrics")->body;
  EXPECT_THAT(metrics, HasSubstr("tessera_prefix_cache_lookups_total 3\n"));
  EXPECT_THAT(metrics, HasSubstr("tessera_prefix_cache_hits_total 2\n"));
  EXPECT_THAT(metrics, HasSubstr("tessera_prefix_cache_budget_bytes 16777216\n"));
  EXPECT_THAT(plain.client().Get("/metrics")->body,
              ::testing::Not(HasSubstr("tessera_prefix_cache")));
}

}  // namespace
}  // namespace tessera::serve
