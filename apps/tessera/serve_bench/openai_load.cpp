#include "apps/tessera/serve_bench/openai_load.h"

#include <httplib.h>

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>

namespace tessera::cli::serve_bench {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

namespace {

double since(Clock::time_point origin) {
  return std::chrono::duration<double>(Clock::now() - origin).count();
}

std::string body_of(json prompt, int64_t max_tokens) {
  return json{{"prompt", std::move(prompt)},
              {"max_tokens", max_tokens},
              {"temperature", 0},
              {"stream", true},
              {"ignore_eos", true}}
      .dump();
}

// Reads "data: {...}" events out of `buffer` as they complete.
void take_events(std::string& buffer, StreamTiming& timing, Clock::time_point origin) {
  std::size_t end;
  while ((end = buffer.find("\n\n")) != std::string::npos) {
    const std::string event = buffer.substr(0, end);
    buffer.erase(0, end + 2);
    if (event.rfind("data: {", 0) != 0) continue;
    const json chunk = json::parse(event.substr(6), nullptr, false);
    if (!chunk.is_object() || !chunk.contains("choices") || chunk["choices"].empty()) continue;
    const json& choice = chunk["choices"][0];
    if (choice.contains("text") && choice["text"].is_string() &&
        !choice["text"].get<std::string>().empty())
      timing.text_times.push_back(since(origin));
    if (choice.contains("finish_reason") && choice["finish_reason"].is_string())
      timing.finish_reason = choice["finish_reason"].get<std::string>();
  }
}

double percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const auto at = static_cast<std::size_t>(p * static_cast<double>(values.size() - 1) + 0.5);
  return values[std::min(at, values.size() - 1)];
}

}  // namespace

std::string completion_body(const std::string& prompt, int64_t max_tokens) {
  return body_of(prompt, max_tokens);
}
std::string completion_body(const std::vector<int32_t>& prompt, int64_t max_tokens) {
  return body_of(prompt, max_tokens);
}

StreamTiming stream_completion(const std::string& host, int port, const std::string& body,
                               Clock::time_point origin) {
  StreamTiming timing;
  httplib::Client client(host, port);
  client.set_read_timeout(600, 0);
  httplib::Request request;
  request.method = "POST";
  request.path = "/v1/completions";
  request.headers = {{"Content-Type", "application/json"}};
  request.body = body;
  std::string buffer;
  request.content_receiver = [&](const char* data, std::size_t size, uint64_t, uint64_t) {
    buffer.append(data, size);
    take_events(buffer, timing, origin);
    return true;
  };
  timing.sent = since(origin);
  const auto response = client.send(request);
  if (!response)
    timing.error = "no response: " + httplib::to_string(response.error()) + " after " +
                   std::to_string(since(origin) - timing.sent) + " s, " +
                   std::to_string(buffer.size()) + " bytes pending, " +
                   std::to_string(timing.text_times.size()) + " text events";
  else if (response->status != 200)
    timing.error = "HTTP " + std::to_string(response->status) + ": " + buffer.substr(0, 300);
  return timing;
}

LoadFigures run_load(const std::string& host, int port, int sessions, int64_t max_tokens,
                     int rounds, const std::vector<std::string>& prompts) {
  LoadFigures figures;
  figures.sessions = sessions;
  std::vector<double> gaps, first_tokens;
  const auto origin = Clock::now();
  for (int round = 0; round < rounds; ++round) {
    std::vector<StreamTiming> timings(static_cast<std::size_t>(sessions));
    std::vector<std::thread> clients;
    const double started = since(origin);
    for (int i = 0; i < sessions; ++i)
      clients.emplace_back([&, i] {
        const std::string& prompt = prompts[static_cast<std::size_t>(i) % prompts.size()];
        timings[static_cast<std::size_t>(i)] =
            stream_completion(host, port, completion_body(prompt, max_tokens), origin);
      });
    for (std::thread& client : clients) client.join();
    figures.seconds += since(origin) - started;
    for (const StreamTiming& t : timings) {
      if (!t.error.empty() || t.finish_reason != "length" || t.text_times.empty()) {
        ++figures.failed;
        if (figures.first_error.empty())
          figures.first_error = t.error.empty()
                                    ? "ended '" + t.finish_reason + "' after " +
                                          std::to_string(t.text_times.size()) + " text events"
                                    : t.error;
        continue;
      }
      figures.tokens += max_tokens;
      first_tokens.push_back(1000 * (t.text_times.front() - t.sent));
      for (std::size_t k = 1; k < t.text_times.size(); ++k)
        gaps.push_back(1000 * (t.text_times[k] - t.text_times[k - 1]));
    }
  }
  figures.tokens_per_s = static_cast<double>(figures.tokens) / figures.seconds;
  figures.p50_ms = percentile(gaps, 0.50);
  figures.p99_ms = percentile(gaps, 0.99);
  figures.first_token_ms = percentile(first_tokens, 0.50);
  return figures;
}

}  // namespace tessera::cli::serve_bench
