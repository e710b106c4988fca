// The template language itself: expressions, filters, tests, loops,
// whitespace control, and errors with origin:line:column. Expected strings are
// what Python jinja2 3.1 prints for the same template with transformers'
// settings (trim_blocks, lstrip_blocks).
#include <gtest/gtest.h>

#include "core/chat/chat_template.h"

namespace tessera::chat {
namespace {

std::string render(std::string_view source, std::string_view context_json = "{}") {
  auto tmpl = ChatTemplate::parse(source, "test.jinja");
  if (!tmpl.ok()) return "PARSE " + tmpl.status().to_string();
  auto context = value_from_json(context_json);
  if (!context.ok()) return "JSON " + context.status().to_string();
  std::tm now{};
  now.tm_year = 124;  // 2024-07-26 09:05:00
  now.tm_mon = 6;
  now.tm_mday = 26;
  now.tm_hour = 9;
  now.tm_min = 5;
  auto out = tmpl->render(*context, now);
  if (!out.ok()) return "RENDER " + out.status().to_string();
  return *out;
}

Status render_status(std::string_view source, std::string_view context_json = "{}") {
  auto tmpl = ChatTemplate::parse(source, "test.jinja");
  if (!tmpl.ok()) return tmpl.status();
  auto out = tmpl->render(*value_from_json(context_json));
  return out.ok() ? Status() : out.status();
}

TEST(ChatLanguage, LiteralsAndArithmetic) {
  EXPECT_EQ(render("{{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }} {{ 7 // 2 }} {{ -7 // 2 }} {{ -7 % 3 }}"),
            "7 9 3 -4 2");
  EXPECT_EQ(render("{{ 7 / 2 }} {{ 4 / 2 }} {{ 2 ** 10 }} {{ 1.5 + 1 }} {{ 0.1 + 0.2 }}"),
            "3.5 2.0 1024 2.5 0.30000000000000004");
  EXPECT_EQ(render("{{ 'a' ~ 1 ~ none }} {{ 'ab' * 3 }} {{ [1] + [2, 3] }}"),
            "a1None ababab [1, 2, 3]");
  EXPECT_EQ(render("{{ true }} {{ False }} {{ none }} {{ 1e20 }} {{ 1e-5 }} {{ 123.0 }}"),
            "True False None 1e+20 1e-05 123.0");
  EXPECT_EQ(render(R"({{ "tab\there" }}|{{ 'it\'s' }}|{{ "\u00e9\x41" }}|{{ 'a' 'b' }})"),
            "tab\there|it's|\xc3\xa9"
            "A|ab");
  EXPECT_EQ(render("{{ {'a': 1, 'b': [true, none, 'x']} }}"), "{'a': 1, 'b': [True, None, 'x']}");
}

TEST(ChatLanguage, ComparisonsLogicAndTernary) {
  EXPECT_EQ(render("{{ 1 < 2 }} {{ 2 <= 1 }} {{ 'a' < 'b' }} {{ 1 == 1.0 }} {{ [1] != [1] }}"),
            "True False True True False");
  EXPECT_EQ(render("{{ 'b' in 'abc' }} {{ 3 not in [1, 2] }} {{ 'k' in {'k': 1} }}"),
            "True True True");
  EXPECT_EQ(render("{{ 0 or 'x' }} {{ 1 and [] }} {{ not '' }} {{ none or none }}"),
            "x [] True None");
  EXPECT_EQ(render("{{ 'y' if 1 > 2 else 'n' }}|{{ 'y' if false }}|"), "n||");
  EXPECT_EQ(render("{{ not 1 == 2 }} {{ x is not defined and not x }}"), "True True");
}

TEST(ChatLanguage, SubscriptsSlicesAndAttributes) {
  const char* ctx = R"({"m": [{"role": "user", "content": "héllo"}, {"role": "bot"}],
                        "d": {"items": 5}})";
  EXPECT_EQ(render("{{ m[0].role }} {{ m[-1]['role'] }} {{ m[0].content[1] }} {{ m.0.role }}", ctx),
            "user bot é user");
  EXPECT_EQ(render("{{ m[5] is undefined }} {{ m[1].content is defined }}", ctx), "True False");
  EXPECT_EQ(render("{{ [1, 2, 3, 4][::-1] }} {{ [1, 2, 3, 4][1:3] }} {{ 'héllo'[1:] }} "
                   "{{ [1, 2, 3, 4, 5][-2:] }} {{ [1, 2, 3, 4, 5][::2] }}",
                   ctx),
            "[4, 3, 2, 1] [2, 3] éllo [4, 5] [1, 3, 5]");
  EXPECT_EQ(render("{{ d['items'] }} {{ d.items }} "
                   "{% for k, v in d.items() %}{{ k }}{{ v }}{% endfor %}",
                   ctx),
            "5 5 items5");
}

TEST(ChatLanguage, Filters) {
  const char* ctx = R"({"xs": [{"n": "b", "k": 2}, {"n": "a", "k": 1}, {"n": "c"}]})";
  EXPECT_EQ(render("{{ xs | length }} {{ 'héllo' | length }} {{ '  x \n' | trim }}|", ctx),
            "3 5 x|");
  EXPECT_EQ(render("{{ xs | map(attribute='n') | join(', ') }}", ctx), "b, a, c");
  EXPECT_EQ(render("{{ xs | selectattr('k') | list | length }} "
                   "{{ xs | selectattr('k', 'equalto', 1) | map(attribute='n') | first }} "
                   "{{ xs | rejectattr('k', 'defined') | map(attribute='n') | list }}",
                   ctx),
            "2 a ['c']");
  EXPECT_EQ(render("{{ xs | sort(attribute='n') | map(attribute='n') | join }} "
                   "{{ [3, 1, 2] | sort(reverse=true) }} {{ [1, 2, 1, 3] | unique | list }}",
                   ctx),
            "abc [3, 2, 1] [1, 2, 3]");
  EXPECT_EQ(render("{{ 'Hello World' | upper }} {{ 'Hello' | lower }} {{ 'hello wORLD' | title }} "
                   "{{ 'hELLO' | capitalize }}"),
            "HELLO WORLD hello Hello World Hello");
  EXPECT_EQ(render("{{ 'aaa' | replace('a', 'b', 2) }} {{ x | default('d') }} "
                   "{{ '' | default('e', true) }} {{ none | default('f') }}"),
            "bba d e None");
  EXPECT_EQ(
      render("{{ '42' | int + 1 }} {{ 'x' | int }} {{ '2.5' | float }} {{ -3 | abs }} "
             "{{ 2.567 | round(2) }} {{ 2.5 | round }} {{ 3.5 | round }} {{ 7 | string ~ '!' }}"),
      "43 0 2.5 3 2.57 2.0 4.0 7!");
  EXPECT_EQ(render("{{ [1, 2] | first }} {{ [1, 2] | last }} {{ 'abc' | reverse }} "
                   "{{ [1, 2] | reverse | list }} "
                   "{% for k, v in {'a': 1} | items %}{{ k }}{{ v }}{% endfor %}"),
            "1 2 cba [2, 1] a1");
  EXPECT_EQ(render("{{ '<a href=\"x\">' | e }} {{ 'x' | safe }} {{ [3, 1, 2] | max }} "
                   "{{ [3, 1, 2] | min }} {{ [1, 2, 3] | sum }}"),
            "&lt;a href=&#34;x&#34;&gt; x 3 1 6");
  EXPECT_EQ(render("{{ 'a\nb\n\nc' | indent(2) }}|{{ 'a\nb' | indent(2, true) }}"),
            "a\n  b\n\n  c|  a\n  b");
}

TEST(ChatLanguage, ToJsonMatchesTransformers) {
  const char* ctx =
      R"({"v": {"s": "q\"\\\n\u00e9\u0001", "n": [1, 2.5, true, null], "e": {}, "l": []}})";
  EXPECT_EQ(render("{{ v | tojson }}", ctx),
            "{\"s\": \"q\\\"\\\\\\n\xc3\xa9\\u0001\", \"n\": [1, 2.5, true, null], \"e\": {}, "
            "\"l\": []}");
  EXPECT_EQ(render("{{ {'a': [1, {'b': 2}], 'c': []} | tojson(indent=2) }}"),
            "{\n  \"a\": [\n    1,\n    {\n      \"b\": 2\n    }\n  ],\n  \"c\": []\n}");
  EXPECT_EQ(render("{{ {'b': 1, 'a': 2} | tojson(sort_keys=true) }}"), "{\"a\": 2, \"b\": 1}");
}

TEST(ChatLanguage, Tests) {
  EXPECT_EQ(render("{{ x is defined }} {{ x is undefined }} {{ none is none }} {{ 'a' is string }} "
                   "{{ 1 is number }} {{ 1.5 is number }} {{ true is boolean }} {{ true is true }} "
                   "{{ 0 is false }}"),
            "False True True True True True True True False");
  EXPECT_EQ(render("{{ {} is mapping }} {{ [] is iterable }} {{ 'x' is sequence }} {{ 3 is odd }} "
                   "{{ 4 is even }} {{ 9 is divisibleby 3 }} {{ 2 is equalto 2 }} "
                   "{{ strftime_now is defined }} {{ nope is defined }}"),
            "True True True True True True True True False");
}

TEST(ChatLanguage, StringAndDictMethods) {
  EXPECT_EQ(render("{{ '\n x \n'.strip() }}|{{ 'xxhixx'.strip('x') }}|{{ '\nhi'.lstrip('\n') }}|"
                   "{{ 'hi\n\n'.rstrip() }}|"),
            "x|hi|hi|hi|");
  EXPECT_EQ(render("{{ 'a,b,,c'.split(',') }} {{ ' a  b '.split() }} {{ 'a b c'.split(' ', 1) }}"),
            "['a', 'b', '', 'c'] ['a', 'b'] ['a', 'b c']");
  EXPECT_EQ(render("{{ 'abc'.startswith('ab') }} {{ 'abc'.endswith(('x', 'c')) }} "
                   "{{ 'aXa'.replace('a', 'b') }} {{ 'ab'.upper() }} {{ 'hello world'.title() }}"),
            "True True bXb AB Hello World");
  EXPECT_EQ(render("{{ d.get('a') }} {{ d.get('z', 0) }} {{ d.get('z') }} {{ d.keys() | list }} "
                   "{{ d.values() | list }}",
                   R"({"d": {"a": 1, "b": 2}})"),
            "1 0 None ['a', 'b'] [1, 2]");
  EXPECT_EQ(render("{% set xs = [] %}{% set _ = xs.append(1) %}{{ xs.append(2) }}{{ xs }}"),
            "None[1, 2]");
}

TEST(ChatLanguage, ForLoops) {
  EXPECT_EQ(render("{% for x in [5, 6, 7] %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}"
                   "{{ loop.first }}{{ loop.last }}{{ loop.length }} {% endfor %}"),
            "103TrueFalse3 212FalseFalse3 321FalseTrue3 ");
  EXPECT_EQ(render("{% for x in [] %}x{% else %}empty{% endfor %}"), "empty");
  EXPECT_EQ(render("{% for x in undefined_thing %}x{% else %}none{% endfor %}"), "none");
  EXPECT_EQ(render("{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}",
                   R"({"d": {"b": 1, "a": 2}})"),
            "b=1;a=2;");
  EXPECT_EQ(render("{% for k in {'x': 1, 'y': 2} %}{{ k }}{% endfor %}"), "xy");
  EXPECT_EQ(render("{% for x in range(10) if x is odd %}{{ x }}{{ loop.length }},{% endfor %}"),
            "15,35,55,75,95,");
  EXPECT_EQ(render("{% for x in range(10) %}{% if x == 2 %}{% continue %}{% endif %}"
                   "{% if x == 4 %}{% break %}{% endif %}{{ x }}{% endfor %}"),
            "013");
  EXPECT_EQ(render("{% for x in [3, 1, 2] | sort %}{{ x }}{% endfor %}"), "123");
  EXPECT_EQ(render("{% for x in [1, 2] %}{% for y in 'ab' %}{{ x }}{{ y }}{{ loop.index }} "
                   "{% endfor %}{{ loop.index }}|{% endfor %}"),
            "1a1 1b2 1|2a1 2b2 2|");
}

TEST(ChatLanguage, SetScopesAndNamespaces) {
  EXPECT_EQ(render("{% set x = 1 %}{% for i in [1, 2] %}{% set x = i %}{% endfor %}{{ x }}"), "1");
  EXPECT_EQ(render("{% set ns = namespace(x=1) %}{% for i in [1, 2] %}{% set ns.x = ns.x + i %}"
                   "{% endfor %}{{ ns.x }}"),
            "4");
  EXPECT_EQ(render("{% set a, b = [1, 2] %}{{ b }}{{ a }}"), "21");
  EXPECT_EQ(render("{% set block %}hi {{ 1 + 1 }}{% endset %}[{{ block }}]"), "[hi 2]");
  EXPECT_EQ(render("{% set d = dict(a=1, b='x') %}{{ d.b }}{{ d['a'] }}"), "x1");
}

TEST(ChatLanguage, MacrosAndFilterBlocks) {
  EXPECT_EQ(render("{% macro greet(name, punct='!') %}Hi {{ name }}{{ punct }}{% endmacro %}"
                   "{{ greet('A') }} {{ greet('B', punct='?') }}"),
            "Hi A! Hi B?");
  EXPECT_EQ(render("{% filter upper %}abc {{ 'd' }}{% endfilter %}"), "ABC D");
}

TEST(ChatLanguage, WhitespaceControlAsTransformers) {
  // trim_blocks drops the newline after a block tag, lstrip_blocks the indent before it.
  EXPECT_EQ(render("{% if true %}\n  yes\n  {% endif %}\nafter"), "  yes\nafter");
  EXPECT_EQ(render("a  {%- if true -%}  b  {%- endif -%}  c"), "abc");
  EXPECT_EQ(render("a\n  {{- 'b' -}}\n  c"), "abc");
  EXPECT_EQ(render("a {# comment #}\n  b"), "a   b");
  EXPECT_EQ(render("line\n    {# comment #}\nnext"), "line\nnext");
  EXPECT_EQ(render("x\n"), "x");  // one trailing newline dropped
  EXPECT_EQ(render("x\n\n"), "x\n");
  EXPECT_EQ(render("  {{ 'v' }}\n"), "  v");  // no lstrip before {{
  EXPECT_EQ(render("{% generation %}kept{% endgeneration %}"), "kept");
}

TEST(ChatLanguage, StrftimeNowUsesTheGivenClock) {
  EXPECT_EQ(render("{{ strftime_now('%d %b %Y %H:%M') }}"), "26 Jul 2024 09:05");
}

TEST(ChatLanguage, SyntaxErrorsNameLineAndColumn) {
  Status s = render_status("ok\n{% if x %}\n{{ 1 + }}\n{% endif %}");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("test.jinja:3:8:"), std::string::npos) << s.message();
  s = render_status("{% for x in y %}no end");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("endfor"), std::string::npos) << s.message();
  s = render_status("a {{ 'unterminated }}");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("test.jinja:1:6:"), std::string::npos) << s.message();
  s = render_status("{{ x }");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  s = render_status("{% endif %}");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  s = render_status("{% break %}");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
}

TEST(ChatLanguage, UnsupportedConstructsAreUnimplementedWithPosition) {
  Status s = render_status("\n  {{ x | wordwrap }}");
  EXPECT_EQ(s.code(), StatusCode::kUnimplemented);
  EXPECT_NE(s.message().find("test.jinja:2:10: the filter 'wordwrap'"), std::string::npos)
      << s.message();
  s = render_status("{{ 'a{}'.format(1) }}");
  EXPECT_EQ(s.code(), StatusCode::kUnimplemented);
  EXPECT_NE(s.message().find("the method 'format'"), std::string::npos) << s.message();
  s = render_status("{% include 'other.jinja' %}");
  EXPECT_EQ(s.code(), StatusCode::kUnimplemented);
  EXPECT_NE(s.message().find("test.jinja:1:4: '{% include %}'"), std::string::npos) << s.message();
  s = render_status("{{ x is prime }}");
  EXPECT_EQ(s.code(), StatusCode::kUnimplemented);
  s = render_status("{{ lipsum(3) }}");
  EXPECT_EQ(s.code(), StatusCode::kUnimplemented);
}

TEST(ChatLanguage, RaiseExceptionCarriesItsMessage) {
  Status s = render_status("\n{{ raise_exception('Roles must alternate') }}");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("test.jinja:2:"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("Roles must alternate"), std::string::npos) << s.message();
}

TEST(ChatLanguage, RenderErrorsAreStatusesNotCrashes) {
  EXPECT_EQ(render_status("{{ x.y }}").code(), StatusCode::kInvalidArgument);  // x undefined
  EXPECT_EQ(render_status("{{ 1 + 'a' }}").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(render_status("{{ 1 // 0 }}").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(render_status("{{ 9223372036854775807 + 1 }}").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(render_status("{% for x in 5 %}{% endfor %}").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(render_status("{% set x = 1 %}{% set x.y = 2 %}").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(render_status("{% set a = [] %}{{ a.append(a) }}").code(),
            StatusCode::kInvalidArgument);  // no reference cycles
}

TEST(ChatLanguage, RunawayTemplatesAreBounded) {
  EXPECT_EQ(render_status("{{ 'x' * 100000000000 }}").code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(render_status("{% for i in range(100000000000) %}{% endfor %}").code(),
            StatusCode::kResourceExhausted);
  auto endless = ChatTemplate::parse(
      "{% for i in range(1000000) %}{% for j in range(1000000) %}{% endfor %}{% endfor %}", "t");
  ASSERT_TRUE(endless.ok());
  RenderLimits limits;
  limits.max_steps = 100000;
  endless->set_limits(limits);
  const auto stopped = endless->render(Value::object());
  EXPECT_EQ(stopped.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(stopped.status().message().find("100000 steps"), std::string::npos);
  EXPECT_EQ(render_status("{% macro f(n) %}{{ f(n) }}{% endmacro %}{{ f(1) }}").code(),
            StatusCode::kResourceExhausted);
  std::string deep(5000, '(');
  EXPECT_EQ(render_status("{{ " + deep + " }}").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(render_status(std::string(5000, '[')).code(), StatusCode::kOk);  // plain text
  EXPECT_EQ(value_from_json(std::string(100000, '[')).status().code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tessera::chat
