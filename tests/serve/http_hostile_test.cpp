// tessera serve's HTTP API against hostile but fair clients (issue 31), in
// process through real loopback sockets: compressed bombs without a key,
// slow-loris sockets, requests racing at the session limit, shutdown mid
// answer, kept-alive and pipelined connections, large bodies, and the
// request fields that must be refused or honoured.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <zlib.h>

#include <atomic>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "apps/tessera/serve/http_server.h"
#include "tests/serve/served.h"

namespace tessera::serve {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;
using testing_served::count_of;
using testing_served::RawSocket;
using testing_served::Served;
using testing_served::ServedOptions;
using Clock = std::chrono::steady_clock;

// Resident-memory figures mean nothing under ASan, whose allocator keeps
// freed memory in quarantine.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kMeasuresMemory = false;
#else
constexpr bool kMeasuresMemory = true;
#endif

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Resident and peak resident memory of this process, in MiB.
double status_mib(const char* field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(field, 0) == 0) return std::stod(line.substr(std::strlen(field))) / 1024;
  return 0;
}

std::string gzip_of_zeros(std::size_t bytes) {
  z_stream z{};
  deflateInit2(&z, 9, Z_DEFLATED, 16 + MAX_WBITS, 9, Z_DEFAULT_STRATEGY);
  std::string out;
  std::vector<char> zeros(1 << 20, '0');
  char buffer[1 << 16];
  for (std::size_t done = 0; done < bytes;) {
    const std::size_t n = std::min(zeros.size(), bytes - done);
    done += n;
    z.next_in = reinterpret_cast<Bytef*>(zeros.data());
    z.avail_in = static_cast<uInt>(n);
    do {
      z.next_out = reinterpret_cast<Bytef*>(buffer);
      z.avail_out = sizeof buffer;
      deflate(&z, done == bytes ? Z_FINISH : Z_NO_FLUSH);
      out.append(buffer, sizeof buffer - z.avail_out);
    } while (z.avail_out == 0);
  }
  deflateEnd(&z);
  return out;
}

std::string post(const std::string& path, const std::string& body,
                 const std::string& extra_headers = "") {
  return "POST " + path + " HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n" +
         extra_headers + "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

int status_of(const std::string& response) {
  return response.size() > 12 ? std::atoi(response.c_str() + 9) : 0;
}

// Item 1: a compressed body is never read for a request without a key, and
// a keyed one is cut at the limit as it inflates.
TEST(HttpHostile, AGzipBombIsRefusedBeforeAndWhileInflating) {
  ServedOptions options;
  options.keys = {"keyA"};
  options.http.limits.max_body_bytes = 1 << 20;
  Served served(options);
  ASSERT_TRUE(served.ok());
  const std::string bomb = gzip_of_zeros(std::size_t{256} << 20);  // 256 MiB in ~256 KB
  const double peak_before = status_mib("VmHWM:");

  RawSocket unkeyed(served.port());
  const auto start = Clock::now();
  // Only the head: the answer must not wait for the body.
  unkeyed.send(
      "POST /v1/completions HTTP/1.1\r\nHost: t\r\nContent-Encoding: gzip\r\n"
      "Content-Length: " +
      std::to_string(bomb.size()) + "\r\n\r\n");
  const std::string refused = unkeyed.read(5, "}}");
  EXPECT_EQ(status_of(refused), 401) << refused;
  EXPECT_THAT(refused, HasSubstr("invalid_api_key"));
  EXPECT_LT(seconds_since(start), 2.0);

  RawSocket keyed(served.port());
  keyed.send(
      "POST /v1/completions HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer keyA\r\n"
      "Content-Encoding: gzip\r\nContent-Length: " +
      std::to_string(bomb.size()) + "\r\n\r\n");
  keyed.send(bomb);
  const std::string too_large = keyed.read(10, "}}");
  EXPECT_EQ(status_of(too_large), 413) << too_large;
  EXPECT_THAT(too_large, HasSubstr("inflates past"));
  EXPECT_THAT(too_large, HasSubstr("\"error\""));
  // Never more than the limit (plus a buffer) was inflated.
  if (kMeasuresMemory) {
    EXPECT_LT(status_mib("VmHWM:") - peak_before, 64);
  }
}

// Item 2: sockets that trickle their heads (or send nothing) occupy no
// worker: /health answers at once while 150 of them are at it, and a head
// that does not end within header_timeout_s is closed.
TEST(HttpHostile, SlowLorisSocketsDoNotStallOtherRequests) {
  ServedOptions options;
  options.http.limits.head_timeout_s = 3;
  options.http.limits.workers = 8;  // far fewer workers than slow sockets
  Served served(options);
  ASSERT_TRUE(served.ok());
  std::vector<std::unique_ptr<RawSocket>> slow;
  for (int i = 0; i < 150; ++i) {
    slow.push_back(std::make_unique<RawSocket>(served.port()));
    ASSERT_TRUE(slow.back()->connected());
    if (i % 2 == 0) slow.back()->send("GET /health HTTP/1.1\r\n");  // half trickle, half are silent
  }
  std::atomic<bool> trickling{true};
  std::thread trickle([&] {
    for (int round = 0; round < 20 && trickling; ++round) {
      for (std::size_t i = 0; i < slow.size(); i += 2) slow[i]->send("X-Slow: 1\r\n");
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });
  auto client = served.client();
  double worst = 0;
  for (int i = 0; i < 10; ++i) {
    const auto start = Clock::now();
    auto health = client.Get("/health");
    worst = std::max(worst, seconds_since(start));
    ASSERT_TRUE(health);
    EXPECT_EQ(health->status, 200);
  }
  EXPECT_LT(worst, 1.0);
  trickling = false;
  trickle.join();
  // The deadline closes them (408 for those that had begun a request).
  const std::string late = slow[0]->read(6);
  EXPECT_TRUE(slow[0]->closed());
  EXPECT_EQ(status_of(late), 408) << late;
  slow[1]->read(6);
  EXPECT_TRUE(slow[1]->closed());
}

// Item 3: six completions at max_sessions = 2 all get their answer (a
// request's session is generating from the moment it exists, and a request
// at the limit waits for a free one), never 404.
TEST(HttpHostile, RequestsAtTheSessionLimitWaitInsteadOfEvictingEachOther) {
  ServedOptions options;
  options.limits.max_sessions = 2;
  Served served(options);
  ASSERT_TRUE(served.ok());
  for (int round = 0; round < 3; ++round) {
    std::vector<int> statuses(6, 0);
    std::vector<std::thread> threads;
    for (int i = 0; i < 6; ++i)
      threads.emplace_back([&, i] {
        auto client = served.client();
        auto res = client.Post("/v1/completions", R"({"prompt": "Once", "max_tokens": 16})",
                               "application/json");
        statuses[i] = res ? res->status : -1;
      });
    for (std::thread& t : threads) t.join();
    for (int i = 0; i < 6; ++i)
      EXPECT_EQ(statuses[i], 200) << "round " << round << " request " << i;
  }
}

TEST(HttpHostile, ARequestThatCannotGetASessionInTimeGets503WithRetryAfter) {
  ServedOptions options;
  options.limits.max_sessions = 1;
  options.config = testing_configs::kEndless;
  options.http.queue_timeout_s = 0.3;
  Served served(options);
  ASSERT_TRUE(served.ok());
  // One endless stream holds the only session.
  RawSocket holder(served.port());
  holder.send(
      post("/v1/completions", R"({"prompt": "Once", "max_tokens": 16000000, "stream": true})"));
  holder.read(10, "data: ");
  auto res = served.client().Post("/v1/completions", R"({"prompt": "Once", "max_tokens": 4})",
                                  "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 503);
  EXPECT_EQ(res->get_header_value("Retry-After"), "1");
  EXPECT_THAT(res->body, HasSubstr("\"error\""));
}

// Item 5: a turn the shutdown cuts short ends with an error, never with a
// finish_reason that reads as a complete answer.
TEST(HttpHostile, ShutdownMidAnswerIsAnErrorNotAFinish) {
  ServedOptions options;
  options.config = testing_configs::kEndless;
  Served served(options);
  ASSERT_TRUE(served.ok());
  RawSocket streamed(served.port());
  streamed.send(post("/v1/chat/completions",
                     R"({"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 16000000,
                         "stream": true})"));
  streamed.read(10, "data: ");
  std::string whole_response;
  std::thread whole([&] {
    RawSocket socket(served.port());
    socket.send(post("/v1/completions", R"({"prompt": "Once", "max_tokens": 16000000})"));
    whole_response = socket.read(30, "}}");
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  served.runtime().shutdown();
  const std::string stream = streamed.read(10, "0\r\n\r\n");
  whole.join();
  EXPECT_THAT(stream, HasSubstr("\"error\""));
  EXPECT_THAT(stream, HasSubstr("shutting down"));
  EXPECT_THAT(stream, Not(HasSubstr("\"finish_reason\":\"stop\"")));
  EXPECT_THAT(stream, Not(HasSubstr("[DONE]")));
  EXPECT_EQ(status_of(whole_response), 503) << whole_response;
  EXPECT_THAT(whole_response, HasSubstr("shutting down"));
  EXPECT_THAT(whole_response, Not(HasSubstr("finish_reason")));
}

// Item 6: a prompt the context cannot hold is the client's error (400 with
// the counts), not a retryable 429.
TEST(HttpHostile, APromptPastTheContextIs400WithTheTokenCounts) {
  Served served;
  ASSERT_TRUE(served.ok());
  json prompt = json::array();
  for (int i = 0; i < 600; ++i) prompt.push_back(10 + i % 100);  // cache.max_tokens is 512
  auto res =
      served.client().Post("/v1/completions", json{{"prompt", prompt}}.dump(), "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 400);
  const json error = json::parse(res->body)["error"];
  EXPECT_EQ(error["code"], "context_length_exceeded");
  EXPECT_EQ(error["type"], "invalid_request_error");
  EXPECT_THAT(error["message"].get<std::string>(), HasSubstr("512"));
  EXPECT_THAT(error["message"].get<std::string>(), HasSubstr("600"));
}

// Item 7: every type error is a 400 naming the field.
TEST(HttpHostile, TypeErrorsAre400sNamingTheField) {
  Served served;
  ASSERT_TRUE(served.ok());
  auto client = served.client();
  for (const char* body :
       {R"({"prompt": "a", "stream": true, "stream_options": {"include_usage": null}})",
        R"({"prompt": "a", "stream": true, "stream_options": {"include_usage": "yes"}})",
        R"({"prompt": "a", "stream_options": "yes"})"}) {
    auto res = client.Post("/v1/completions", body, "application/json");
    ASSERT_TRUE(res);
    if (std::string(body).find("null") != std::string::npos) {
      EXPECT_EQ(res->status, 200) << body;  // null is "not given"
      continue;
    }
    EXPECT_EQ(res->status, 400) << body;
    EXPECT_THAT(json::parse(res->body)["error"]["message"].get<std::string>(),
                HasSubstr("stream_options"));
  }
}

// Item 8: an unseeded sampled request draws its seed and says which; the
// seed replays it.
TEST(HttpHostile, UnseededSamplingVariesAndTheReportedSeedReplaysIt) {
  Served served({}, "[sampling]\ntemperature = 1.0\n");
  ASSERT_TRUE(served.ok());
  auto client = served.client();
  const std::string body = R"({"prompt": "Once upon a time", "max_tokens": 24})";
  std::set<std::string> texts;
  std::string first_text, first_seed;
  for (int i = 0; i < 3; ++i) {
    auto res = client.Post("/v1/completions", body, "application/json");
    ASSERT_TRUE(res);
    ASSERT_EQ(res->status, 200);
    const std::string text = json::parse(res->body)["choices"][0]["text"];
    texts.insert(text);
    if (i == 0) {
      first_text = text;
      first_seed = res->get_header_value("X-Tessera-Seed");
    }
  }
  EXPECT_GT(texts.size(), 1u);
  ASSERT_FALSE(first_seed.empty());
  const std::string replay =
      R"({"prompt": "Once upon a time", "max_tokens": 24, "seed": )" + first_seed + "}";
  auto again = client.Post("/v1/completions", replay, "application/json");
  ASSERT_TRUE(again);
  EXPECT_EQ(json::parse(again->body)["choices"][0]["text"], first_text);
}

// Item 10: the second request on a kept-alive connection is as fast as the
// first (no Nagle / delayed-ACK stall), streamed chunks included.
TEST(HttpHostile, KeptAliveRequestsAreNotDelayed) {
  Served served;
  ASSERT_TRUE(served.ok());
  RawSocket socket(served.port());
  std::vector<double> times;
  for (int i = 0; i < 8; ++i) {
    const auto start = Clock::now();
    socket.send("GET /health HTTP/1.1\r\nHost: t\r\n\r\n");
    socket.read(5, "\"ok\"}");
    times.push_back(seconds_since(start));
    socket.take();
  }
  std::sort(times.begin(), times.end());
  EXPECT_LT(times[times.size() / 2], 0.02);  // was ~0.040 from the second on
  const auto start = Clock::now();
  socket.send(post("/v1/completions", R"({"prompt": "Once", "max_tokens": 4, "stream": true})"));
  const std::string stream = socket.read(10, "0\r\n\r\n");
  EXPECT_THAT(stream, HasSubstr("[DONE]"));
  EXPECT_LT(seconds_since(start), 0.5);
}

// Item 11: pipelined requests are answered, in order.
TEST(HttpHostile, PipelinedRequestsAreAnsweredInOrder) {
  Served served;
  ASSERT_TRUE(served.ok());
  RawSocket socket(served.port());
  socket.send("GET /health HTTP/1.1\r\nHost: t\r\n\r\n" +
              post("/v1/completions", R"({"prompt": "Once", "max_tokens": 2})") +
              "GET /v1/models HTTP/1.1\r\nHost: t\r\n\r\n");
  const std::string all = socket.read(10, "\"owned_by\"");
  EXPECT_EQ(count_of(all, "HTTP/1.1 200 OK"), 3) << all;
  const std::size_t health = all.find("\"status\":\"ok\"");
  const std::size_t completion = all.find("text_completion");
  const std::size_t models = all.find("\"object\":\"list\"");
  EXPECT_LT(health, completion);
  EXPECT_LT(completion, models);
  EXPECT_NE(models, std::string::npos);
}

// A flood of pipelined requests refused from their heads alone is answered
// in order while the client reads, and closed (not answered in part) once
// it stops reading; the server goes on.
TEST(HttpHostile, APipelinedFloodOfRefusedRequestsIsAnsweredOrClosed) {
  Served served;
  ASSERT_TRUE(served.ok());
  std::string flood;
  for (int i = 0; i < 200; ++i) flood += "GET /nope HTTP/1.1\r\nHost: t\r\n\r\n";
  RawSocket reader(served.port());
  reader.send(flood);
  std::string answers;
  const auto start = Clock::now();
  while (count_of(answers, "HTTP/1.1 404 Not Found") < 200 && !reader.closed() &&
         seconds_since(start) < 10)
    answers = reader.read(0.1);
  EXPECT_EQ(count_of(answers, "HTTP/1.1 404 Not Found"), 200);
  // 20,000 requests (about 700 KB) sent without reading a byte of the answers.
  RawSocket deaf(served.port());
  std::string big;
  for (int i = 0; i < 100; ++i) big += flood;
  deaf.send(big);  // may fail part way: the server closes a client that does not read
  auto health = served.client().Get("/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
}

// Item 12: large bodies do not stay resident after their requests.
TEST(HttpHostile, LargeBodiesAreNotRetained) {
  ServedOptions options;
  options.http.limits.max_body_bytes = 4 << 20;
  Served served(options);
  ASSERT_TRUE(served.ok());
  auto client = served.client();
  const std::string big = R"({"prompt": 7, "pad": ")" + std::string(3 << 20, 'a') + "\"}";
  client.Post("/v1/completions", big, "application/json");  // the allocator's first growth
  const double before = status_mib("VmRSS:");
  for (int i = 0; i < 16; ++i) {
    auto res = client.Post("/v1/completions", big, "application/json");
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 400);
  }
  if (kMeasuresMemory) {
    EXPECT_LT(status_mib("VmRSS:") - before, 32);
  }
  auto over = client.Post("/v1/completions", big + std::string(2 << 20, ' '), "application/json");
  ASSERT_TRUE(over);
  EXPECT_EQ(over->status, 413);
  EXPECT_THAT(over->body, HasSubstr("max_body_bytes"));
}

// What a client asks for that is not served is refused by name, not ignored;
// top_p = 0 is greedy; a wrong method is 405; /v1/models/{id} answers.
TEST(HttpHostile, UnservedFieldsAreRefusedAndSmallGapsClosed) {
  Served served({}, "[sampling]\ntemperature = 1.0\n");
  ASSERT_TRUE(served.ok());
  auto client = served.client();
  for (const char* field :
       {R"("echo": true)", R"("logit_bias": {"5": 10})", R"("best_of": 3)", R"("suffix": "x")"}) {
    auto res = client.Post("/v1/completions", std::string(R"({"prompt": "Once", )") + field + "}",
                           "application/json");
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 400) << field;
    const json error = json::parse(res->body)["error"];
    EXPECT_THAT(error["message"].get<std::string>(), HasSubstr("not supported")) << field;
    EXPECT_FALSE(error["param"].is_null()) << field;
  }
  for (const char* field :
       {R"("tools": [{"type": "function"}])", R"("response_format": {"type": "json_object"})"}) {
    auto res = client.Post(
        "/v1/chat/completions",
        std::string(R"({"messages": [{"role": "user", "content": "Hi"}], )") + field + "}",
        "application/json");
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 400) << field;
  }
  // Fields that ask for nothing are taken.
  auto neutral = client.Post(
      "/v1/completions",
      R"({"prompt": "Once", "max_tokens": 2, "logprobs": null, "echo": false, "presence_penalty": 0,
          "logit_bias": {}})",
      "application/json");
  ASSERT_TRUE(neutral);
  EXPECT_EQ(neutral->status, 200) << neutral->body;
  // top_p = 0: the most likely token each step, the same every time.
  std::set<std::string> greedy;
  for (int i = 0; i < 3; ++i) {
    auto res = client.Post("/v1/completions",
                           R"({"prompt": "Once upon a time", "max_tokens": 12, "top_p": 0})",
                           "application/json");
    ASSERT_TRUE(res);
    ASSERT_EQ(res->status, 200) << res->body;
    greedy.insert(json::parse(res->body)["choices"][0]["text"].get<std::string>());
  }
  EXPECT_EQ(greedy.size(), 1u);
  auto model = client.Get("/v1/models/stories260K.gguf");
  ASSERT_TRUE(model);
  EXPECT_EQ(model->status, 200);
  EXPECT_EQ(json::parse(model->body)["id"], "stories260K.gguf");
  auto unknown = client.Get("/v1/models/gpt-9");
  ASSERT_TRUE(unknown);
  EXPECT_EQ(unknown->status, 404);
  EXPECT_EQ(json::parse(unknown->body)["error"]["code"], "model_not_found");
  auto wrong = client.Get("/v1/completions");
  ASSERT_TRUE(wrong);
  EXPECT_EQ(wrong->status, 405);
  EXPECT_EQ(wrong->get_header_value("Allow"), "POST");
}

// /metrics asks for a key only when told to; /health never does.
TEST(HttpHostile, MetricsNeedAKeyWhenConfigured) {
  ServedOptions options;
  options.keys = {"keyA"};
  options.http.metrics_need_key = true;
  Served served(options);
  ASSERT_TRUE(served.ok());
  auto client = served.client();
  EXPECT_EQ(client.Get("/metrics")->status, 401);
  EXPECT_EQ(client.Get("/health")->status, 200);
  client.set_bearer_token_auth("keyA");
  EXPECT_EQ(client.Get("/metrics")->status, 200);
  // The scheme is case-insensitive (RFC 9110 11.1).
  httplib::Headers lower = {{"Authorization", "bearer keyA"}};
  EXPECT_EQ(served.client().Get("/metrics", lower)->status, 200);
}

}  // namespace
}  // namespace tessera::serve
