// Templates written to exhaust the parser or the renderer: chains the
// nesting limit must count, values nested at render time, and work that
// never ends. Each must end in a Status naming the limit and the line, never
// a crash or a hang.
#include <gtest/gtest.h>

#include <pthread.h>

#include <chrono>
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

Result<std::string> parse_and_render(std::string_view source, std::string_view context_json,
                                     const RenderLimits& limits) {
  ASSIGN_OR_RETURN(ChatTemplate tmpl, ChatTemplate::parse(source, "test.jinja"));
  tmpl.set_limits(limits);
  ASSIGN_OR_RETURN(Value context, value_from_json(context_json));
  return tmpl.render(context);
}

// Parses and renders on a thread with a 1 MB stack, less than a server's
// worker threads get: the limits must hold there, sanitizers included.
Result<std::string> render(std::string_view source, std::string_view context_json = "{}",
                           const RenderLimits& limits = {}) {
  struct Job {
    std::string_view source, context_json;
    RenderLimits limits;
    Result<std::string> result = internal_error("not run");
  } job{source, context_json, limits};
  pthread_attr_t attributes;
  pthread_attr_init(&attributes);
  pthread_attr_setstacksize(&attributes, 1 << 20);
  pthread_t thread;
  const auto run = [](void* arg) -> void* {
    auto* j = static_cast<Job*>(arg);
    j->result = parse_and_render(j->source, j->context_json, j->limits);
    return nullptr;
  };
  TESSERA_CHECK(pthread_create(&thread, &attributes, run, &job) == 0, "pthread_create");
  pthread_join(thread, nullptr);
  pthread_attr_destroy(&attributes);
  return std::move(job.result);
}

// How long a render that ends at a limit may take: loose, as a hang is 2^60
// steps. The whole step budget is about 0.5 s in release and up to 25 s in
// the ASan debug build, so the renders that must run out of it get a tenth
// of it there (RenderLimits::max_steps): the same work per step is charged,
// and an uncharged copy would still run for hours.
#if defined(NDEBUG) && !defined(__SANITIZE_ADDRESS__)
constexpr double kTimeCapSeconds = 10;
constexpr uint64_t kLimitTestSteps = RenderLimits{}.max_steps;
#else
constexpr double kTimeCapSeconds = 150;
constexpr uint64_t kLimitTestSteps = RenderLimits{}.max_steps / 10;
#endif

// How deep the values that must be torn down and compared without recursion
// go: a third as deep in the debug and sanitizer builds, still tens of
// thousands of levels, far past what recursion on a 1 MB stack survives.
#if defined(NDEBUG) && !defined(__SANITIZE_ADDRESS__)
constexpr int kDeep = 300000;
#else
constexpr int kDeep = 100000;
#endif
// kDeep * part (300,000, 200,000, 100,000 levels in release).
std::string deep(double part = 1) {
  return std::to_string(static_cast<int>(kDeep * part));
}

RenderLimits limit_test_limits() {
  RenderLimits limits;
  limits.max_steps = kLimitTestSteps;
  return limits;
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

TEST(ChatHostile, ValuesNestedAtRenderTimeAreDestroyedAndPrintedSafely) {
  // A million nested lists, each wrapping the last (in the loop's scope, as
  // Jinja scopes it): the step budget ends the loop, and the value is torn
  // down iteratively (recursion would overflow the stack).
  expect_refused(render("{% set x = [] %}{% for i in range(1000000) %}{% set x = [x] %}"
                        "{% endfor %}\n{{ x|length }}",
                        "{}", limit_test_limits()),
                 StatusCode::kResourceExhausted, "steps", "test.jinja:1:");
  // 300,000 deep renders: within the budget, which also pays for each item
  // of the range and of the loop's copy of it.
  EXPECT_EQ(text("{% set x = [] %}{% for i in range(" + deep() + ") %}{% set x = [x] %}" +
                 "{% if loop.last %}{{ x|length }}{% endif %}{% endfor %}{{ x|length }}"),
            "10");
  expect_refused(render("{% set x = {} %}{% for i in range(" + deep(2.0 / 3) + ") %}" +
                        "{% set x = {'a': x} %}\n"
                        "{% if loop.last %}{{ x|length }}{{ x|tojson }}{% endif %}{% endfor %}"),
                 StatusCode::kInvalidArgument, "tojson: value nested deeper than", "test.jinja:2:");
  // Lists chained through append, each append seeing a shallow value: nothing
  // checks depth there, so tearing down and comparing must not recurse.
  const auto chained = render(
      "{% set root = [] %}{% set ns = namespace(cur=root) %}{% for i in range(" + deep(2.0 / 3) +
      ") %}"
      "{% set n = [] %}{% if ns.cur.append(n) %}{% endif %}{% set ns.cur = n %}{% endfor %}"
      "{{ root == root }}{{ root }}");
  ASSERT_TRUE(chained.ok()) << chained.status().to_string();
  EXPECT_EQ(chained->substr(0, 8), "True[[[[");
  const auto twins = render(
      "{% set a = [] %}{% set b = [] %}{% set ns = namespace(x=a, y=b) %}"
      "{% for i in range(" +
      deep(1.0 / 3) +
      ") %}{% set n = [] %}{% set m = [] %}"
      "{% if ns.x.append(n) or ns.y.append(m) %}{% endif %}{% set ns.x = n %}{% set ns.y = m %}"
      "{% endfor %}{{ a == b }} {{ a != b }} {{ a }}");
  ASSERT_TRUE(twins.ok()) << twins.status().to_string();
  EXPECT_EQ(twins->substr(0, 14), "True False [[[");
  EXPECT_NE(twins->find("..."), std::string::npos);  // repr stops descending
}

TEST(ChatHostile, RepeatingAnEmptySequenceHugeTimesIsImmediate) {
  EXPECT_EQ(text("[{{ '' * 2**62 }}]"), "[]");
  EXPECT_EQ(text("{{ [] * 2**62 }}"), "[]");
  EXPECT_EQ(text("{{ (2**62) * '' }}"), "");
  expect_refused(render("\n{{ 'a' * 2**62 }}"), StatusCode::kResourceExhausted,
                 "string repetition past", "test.jinja:2:");
}

// A value whose paths double at each level: sixty levels of [x, x] share one
// list per level, so it is small, but a walk that follows every path visits
// 2^60 of them. Built in a namespace, which outlives the loop's scope.
constexpr std::string_view kShared =
    "{% set ns = namespace(x=[]) %}{% for i in range(60) %}{% set ns.x = [ns.x, ns.x] %}"
    "{% endfor %}\n";

// A render that must end at the output limit or the step budget, fast.
void expect_ends_at_a_limit(std::string_view source, std::string_view where) {
  const auto start = std::chrono::steady_clock::now();
  const auto result = render(source, "{}", limit_test_limits());
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, kTimeCapSeconds);
  ASSERT_FALSE(result.ok()) << "rendered " << result->size() << " bytes";
  EXPECT_EQ(result.status().code(), StatusCode::kResourceExhausted) << result.status().to_string();
  const std::string& message = result.status().message();
  EXPECT_TRUE(message.find("passed 8388608 bytes") != std::string::npos ||
              message.find("ran past " + std::to_string(kLimitTestSteps) + " steps") !=
                  std::string::npos)
      << result.status().to_string();
  EXPECT_EQ(message.rfind(where, 0), 0u) << result.status().to_string();
}

TEST(ChatHostile, SharedSubValuesArePrintedWithinTheLimits) {
  const std::string_view walks[] = {
      "{{ ns.x }}",
      "{{ ns.x|tojson }}",
      "{{ ns.x|tojson(indent=2) }}",
      "{{ ns.x|string }}",
      "{{ ns.x|string|length }}",
      "{{ [ns.x]|join(', ') }}",
      "{{ [ns.x, ns.x]|join }}",
      "{{ ns.x ~ '' }}",
      "{{ 'a' ~ ns.x }}",
      "{{ ns.x|trim }}",
      "{{ ns.x|replace('[', '(') }}",
      "{{ ns.x|upper }}",
      "{{ ns.x|e }}",
      "{{ ns.x|indent(2) }}",
      "{{ raise_exception(ns.x) }}",
      "{% filter upper %}{{ ns.x }}{% endfilter %}",
      "{{ ns.x|map('string')|list }}",
      "{{ {'a': ns.x}|tojson }}",
      "{{ {'a': ns.x}|items|list }}",
  };
  for (const std::string_view walk : walks) {
    SCOPED_TRACE(walk);
    expect_ends_at_a_limit(std::string(kShared) + std::string(walk), "test.jinja:2:");
  }
}

TEST(ChatHostile, SharedSubValuesCompareAndSearchInLinearTime) {
  // Walks that visit each shared list once (or stop at the first level)
  // finish at once and give Python's answers.
  EXPECT_EQ(text(std::string(kShared) +
                 "{{ ns.x == ns.x }} {{ [ns.x] == [ns.x] }} {{ 'a' in ns.x }} "
                 "{{ ns.x in [ns.x] }} {{ ns.x|length }} {{ [ns.x, ns.x]|unique|list|length }} "
                 "{{ ns.x|first|length }} {{ ns.x is sameas ns.x }}"),
            "True True False True 2 1 2 True");
  // An error message that quotes the value quotes a bounded prefix of it.
  const auto missing = render(std::string(kShared) + "{{ nothing[ns.x] }}");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kInvalidArgument);
  EXPECT_LT(missing.status().message().size(), 1000u) << missing.status().to_string();
}

TEST(ChatHostile, CopiesOfLongListsSpendTheStepBudget) {
  // Each line does O(1) steps of template but copies, compares or sorts a
  // list of 100,000 items; a loop of them must spend the budget per item,
  // not per expression, or it runs for hours.
  const std::string big = "{% set big = range(100000)|list %}";
  const std::string_view per_iteration[] = {
      "{% set y = big|list %}",
      "{% set y = big + [] %}",
      "{% set y = big * 1 %}",
      "{% set y = big[1:] %}",
      "{% set y = big|reverse %}",
      "{% set y = big|first %}",
      "{% set y = big|sort %}",
      "{% set y = big|unique|list %}",
      "{% set y = -1 in big %}",
      "{% set y = big == big[:] %}",
      "{% set y = big|join %}",
      "{% set y = big|sum %}",
      "{% set y = big|max %}",
      "{% set y = big|select('odd')|list %}",
      "{% for i in big %}{% break %}{% endfor %}",
      "{% set y = range(100000) %}",
      "{% set y = dict(a=big).items() %}",
      "{% if ns.l.append(big) %}{% endif %}",
  };
  for (const std::string_view body : per_iteration) {
    SCOPED_TRACE(body);
    expect_ends_at_a_limit(big + "{% set ns = namespace(l=[]) %}\n{% for i in range(1000000) %}" +
                               std::string(body) + "{% endfor %}",
                           "test.jinja:2:");
  }
  // The same lists, once each, are well within the budget.
  EXPECT_EQ(
      text(big + "{{ (big|list + big)|length }} {{ big|sort|last }} {{ big|unique|list|length "
                 "}} {{ -1 in big }} {{ big|sum }}"),
      "200000 99999 100000 False 4999950000");
}

TEST(ChatHostile, CopiesOfLongStringsSpendTheStepBudget) {
  // An 8 MB-ish string copied a million times is 8 TB of work (and as much
  // memory, kept in a list); strings cost steps by their size.
  // Lists of them are copied, compared, sorted and hashed by their bytes.
  const std::string long_string =
      "{% set s = 'a' * 4000000 %}{% set l = [s, s, s, s] %}{% set ns = namespace(l=[]) %}"
      "{% macro f(x) %}{% endmacro %}\n";
  const std::string_view per_iteration[] = {
      "{% set y = s ~ '' %}",
      "{% set y = s + 'b' %}",
      "{% set y = s|trim %}",
      "{% set y = [s]|string %}",
      "{% set y = s[0] %}",
      "{% set y = 'b' in s %}",
      "{% if ns.l.append(s) %}{% endif %}",
      "{% for x in l %}{% endfor %}",
      "{{ f(l) }}",
      "{% set y = l == l[:] %}",
      "{% set y = l|sort %}",
      "{% set y = l|unique|list %}",
      "{% set y = l|max %}",
  };
  for (const std::string_view body : per_iteration) {
    SCOPED_TRACE(body);
    expect_ends_at_a_limit(
        long_string + "{% for i in range(1000000) %}" + std::string(body) + "{% endfor %}",
        "test.jinja:2:");
  }
}

TEST(ChatHostile, SubstringSearchIsLinearInTheTextAndTheNeedle) {
  // 'aa...ab' in 'aaaa...' compares the whole needle at every position with
  // a naive search: 8 * 10^12 byte comparisons here.
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(text("{% set h = 'a' * 4000000 %}{% set n = 'a' * 2000000 + 'b' %}"
                 "{{ n in h }} {{ h is in [h] }} {{ n is in h }} {{ h.find(n) }} {{ h.count(n) }} "
                 "{{ h.split(n)|length }} {{ h.replace(n, 'x')|length }} "
                 "{{ h|trim('b' * 4000000 + 'a')|length }} {{ h.find('a' * 100 + 'b') }}"),
            "False True False -1 0 1 4000000 0 -1");
  EXPECT_EQ(text("{% set n = 'ab' * 50 %}{{ ('x' + n + n + 'y').find(n + n) }} "
                 "{{ ('xx' + n + 'c' + n).count(n) }} {{ (n + '.' + n).split(n)|length }} "
                 "{{ ('a' + n).replace(n, '-') }}"),
            "1 2 3 a-");
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
            kTimeCapSeconds);
}

TEST(ChatHostile, ManyKeysAndVariablesDoNotMakeLookupsCostTheirCount) {
  // A dict of 100,000 keys, built from pairs and then read in a loop: with
  // a linear lookup, 5 * 10^9 key comparisons to build and as many to read.
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(text("{% set ns = namespace(l=[], n=0) %}{% for i in range(100000) %}"
                 "{% if ns.l.append(['k' ~ i, i]) %}{% endif %}{% endfor %}{% set d = dict(ns.l) %}"
                 "{% for i in range(50000) %}{% if d.k99999 and d['k' ~ i] == i %}"
                 "{% set ns.n = ns.n + 1 %}{% endif %}{% endfor %}{{ d|length }} {{ ns.n }}"),
            "100000 50000");
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
            kTimeCapSeconds);
  // A macro call copies the template's top-level variables: a step each.
  std::string many;
  for (int i = 0; i < 20000; ++i) many += "{% set v" + std::to_string(i) + " = 1 %}";
  expect_ends_at_a_limit(many +
                             "{% macro f() %}{% endmacro %}\n"
                             "{% for i in range(1000000) %}{{ f() }}{% endfor %}",
                         "test.jinja:2:");
}

}  // namespace
}  // namespace tessera::chat
