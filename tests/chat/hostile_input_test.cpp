// Templates written to exhaust the parser or the renderer: chains the
// nesting limit must count, values nested at render time, and work that
// never ends. Each must end in a Status naming the limit and the line, never
// a crash or a hang.
#include <gtest/gtest.h>

#include <pthread.h>

#include <string>

#include "core/chat/chat_template.h"

namespace tessera::chat {
namespace {

std::string repeated(std::string_view piece, int times) {
  std::string out;
  out.reserve(piece.size() * static_cast<std::size_t>(times));
  for (int i = 0; i < times; ++i) out += piece;
  return out;
}

Result<std::string> parse_and_render(std::string_view source, std::string_view context_json) {
  ASSIGN_OR_RETURN(ChatTemplate tmpl, ChatTemplate::parse(source, "test.jinja"));
  ASSIGN_OR_RETURN(Value context, value_from_json(context_json));
  return tmpl.render(context);
}

// Parses and renders on a thread with a 1 MB stack, less than a server's
// worker threads get: the limits must hold there, sanitizers included.
Result<std::string> render(std::string_view source, std::string_view context_json = "{}") {
  struct Job {
    std::string_view source, context_json;
    Result<std::string> result = internal_error("not run");
  } job{source, context_json};
  pthread_attr_t attributes;
  pthread_attr_init(&attributes);
  pthread_attr_setstacksize(&attributes, 1 << 20);
  pthread_t thread;
  const auto run = [](void* arg) -> void* {
    auto* j = static_cast<Job*>(arg);
    j->result = parse_and_render(j->source, j->context_json);
    return nullptr;
  };
  TESSERA_CHECK(pthread_create(&thread, &attributes, run, &job) == 0, "pthread_create");
  pthread_join(thread, nullptr);
  pthread_attr_destroy(&attributes);
  return std::move(job.result);
}

// The output, or the error as text (so a failing EXPECT shows it).
std::string text(std::string_view source, std::string_view context_json = "{}") {
  auto out = render(source, context_json);
  return out.ok() ? *out : "ERROR " + out.status().to_string();
}

void expect_refused(const Result<std::string>& result, StatusCode code, std::string_view words,
                    std::string_view where) {
  ASSERT_FALSE(result.ok()) << "rendered " << result->size() << " bytes";
  EXPECT_EQ(result.status().code(), code) << result.status().to_string();
  EXPECT_NE(result.status().message().find(words), std::string::npos)
      << result.status().to_string();
  EXPECT_EQ(result.status().message().rfind(where, 0), 0u) << result.status().to_string();
}

TEST(ChatHostile, LongChainsOfOperatorsAndPostfixesAreRefusedAtTheirLine) {
  constexpr int kLinks = 100000;
  const std::string chains[] = {
      "{{ 1" + repeated("+1", kLinks) + " }}",
      "{{ 1" + repeated("**1", kLinks) + " }}",
      "{{ 'a'" + repeated(" ~ 'a'", kLinks) + " }}",
      "{{ messages" + repeated("[0]", kLinks) + " }}",
      "{{ x" + repeated(".a", kLinks) + " }}",
      "{{ 'a'" + repeated("|trim", kLinks) + " }}",
      "{{ 1" + repeated(" is odd", kLinks) + " }}",
      "{{ 1" + repeated(" == 1", kLinks) + " }}",
      "{{ true" + repeated(" and true", kLinks) + " }}",
      "{{ 1" + repeated(" if true else 1", kLinks) + " }}",
      "{{ 'a'" + repeated(".strip()", kLinks) + " }}",
  };
  for (const std::string& chain : chains) {
    SCOPED_TRACE(chain.substr(0, 24));
    expect_refused(render("\n" + chain, R"({"messages": [[0]]})"), StatusCode::kInvalidArgument,
                   "nested too deeply", "test.jinja:2:");
  }
}

TEST(ChatHostile, ChainsOfReasonableLengthStillRender) {
  EXPECT_EQ(text("{{ 1" + repeated("+1", 40) + " }}"), "41");
  EXPECT_EQ(text("{{ 'a'" + repeated("|trim", 40) + " }}"), "a");
  const std::string nested = repeated(R"({"a": )", 40) + "7" + repeated("}", 40);
  EXPECT_EQ(text("{{ x" + repeated(".a", 40) + " }}", R"({"x": )" + nested + "}"), "7");
  EXPECT_EQ(text("{{ 'a'" + repeated("[0]", 40) + " }}"), "a");
}

TEST(ChatHostile, NestingInsideMacrosCalledRecursivelyIsBounded) {
  // Each call renders a body 80 blocks deep, which calls the macro again: the
  // renderer's depth is counted across calls, not only within one body.
  const std::string body =
      repeated("{% if true %}", 80) + "{{ f(n) }}" + repeated("{% endif %}", 80);
  expect_refused(render("{% macro f(n) %}" + body + "{% endmacro %}\n{{ f(1) }}"),
                 StatusCode::kResourceExhausted, "template nested deeper than 128 levels",
                 "test.jinja:1:");
  // Recursion of the depth templates use (a JSON schema's levels) renders.
  EXPECT_EQ(text("{% macro f(n) %}{% if n > 0 %}{% for i in [n] %}{{ f(n - 1) }}{{ i }}"
                 "{% endfor %}{% endif %}{% endmacro %}{{ f(12) }}"),
            "123456789101112");
}

}  // namespace
}  // namespace tessera::chat
