// Every template of tests/data/chat/templates.json rendered with every case of
// cases.json must equal @huggingface/jinja's rendering in expected.json
// (written by tests/data/chat/make_reference.mjs) byte for byte. Where that
// reference fails but Python jinja2 in transformers' setup renders
// (expected_jinja2.json, from cross_check_jinja2.py: loops over an undefined
// variable, which jinja2 treats as empty), it must equal jinja2's rendering.
// Where both fail, tessera must fail too; where the failure is the
// template's raise_exception, with the same message.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "core/chat/chat_template.h"

namespace tessera::chat {
namespace {

const std::string kDataDir = TESSERA_SOURCE_DIR "/tests/data/chat/";

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

Value read_json(const std::string& name) {
  auto parsed = value_from_json(read_file(kDataDir + name));
  EXPECT_TRUE(parsed.ok()) << name << ": " << parsed.status().to_string();
  return parsed.ok() ? *parsed : Value();
}

const Value& field(const Value& object, std::string_view key) {
  static const Value kUndefined;
  const Value* v = object.is_object() ? object.as_object().find(key) : nullptr;
  return v ? *v : kUndefined;
}

std::tm parse_now(const std::string& iso) {  // "2026-11-27T09:05:00Z"
  std::tm tm{};
  std::istringstream in(iso);
  in >> std::get_time(&tm, "%Y-%m-%dT%H:%M:%S");
  return tm;
}

// Templates that use a construct tessera does not implement; parse() must say
// so (Unimplemented, naming it) instead of rendering.
const std::map<std::string, std::string> kUnsupported = {
    {"deepseek-ai-DeepSeek-V3.2", "the filter 'from_json'"},  // not a Jinja2 filter
    {"tencent-Hy3", "the method 'format'"},
};

TEST(ChatReference, EveryTemplateAndCaseMatchesHuggingFaceJinja) {
  const Value templates = read_json("templates.json");
  const Value cases = read_json("cases.json");
  const Value expected = read_json("expected.json");
  const Value expected_jinja2 = read_json("expected_jinja2.json");
  ASSERT_TRUE(templates.is_array() && cases.is_object() && expected.is_object() &&
              expected_jinja2.is_object());
  std::map<std::string, std::string> jinja2_outputs;  // "template/case/gen" -> output
  const auto key_of = [](const Value& r) {
    return field(r, "template").as_string() + "/" + field(r, "case").as_string() + "/" +
           (field(r, "add_generation_prompt").truthy() ? "1" : "0");
  };
  for (const Value& r : field(expected_jinja2, "results").as_array())
    if (field(r, "output").is_string()) jinja2_outputs[key_of(r)] = field(r, "output").as_string();
  const std::tm now = parse_now(field(cases, "now").as_string());

  std::map<std::string, Value> template_info;
  for (const Value& t : templates.as_array()) template_info[field(t, "name").as_string()] = t;
  std::map<std::string, Value> case_info;
  for (const Value& c : field(cases, "cases").as_array())
    case_info[field(c, "name").as_string()] = c;

  std::map<std::string, Result<ChatTemplate>> parsed;
  int outputs_equal = 0, jinja2_equal = 0, errors_agree = 0, unsupported = 0, total = 0;
  std::set<std::string> templates_rendered;
  for (const Value& r : field(expected, "results").as_array()) {
    const std::string name = field(r, "template").as_string();
    SCOPED_TRACE(name);
    auto it = parsed.find(name);
    if (it == parsed.end()) {
      const Value& info = template_info.at(name);
      const std::string source = read_file(kDataDir + field(info, "file").as_string());
      it = parsed.emplace(name, ChatTemplate::parse(source, field(info, "file").as_string())).first;
    }
    if (kUnsupported.count(name)) {
      ++total;
      ++unsupported;
      ASSERT_FALSE(it->second.ok()) << "now supported: drop it from kUnsupported";
      EXPECT_EQ(it->second.status().code(), StatusCode::kUnimplemented);
      EXPECT_NE(it->second.status().message().find(kUnsupported.at(name)), std::string::npos)
          << it->second.status().message();
      continue;
    }
    if (!it->second.ok()) {
      ADD_FAILURE() << it->second.status().to_string();
      continue;
    }
    if (!field(r, "parse_error").is_undefined()) {
      ADD_FAILURE() << "the reference could not parse it: " << field(r, "parse_error").as_string();
      continue;
    }
    ++total;
    const Value& info = template_info.at(name);
    const Value& c = case_info.at(field(r, "case").as_string());
    SCOPED_TRACE(field(r, "case").as_string() +
                 (field(r, "add_generation_prompt").truthy() ? " +gen" : " -gen"));
    ChatRequest request;
    request.messages_value = field(c, "messages");
    request.add_generation_prompt = field(r, "add_generation_prompt").truthy();
    request.bos_token = field(info, "bos_token").as_string();
    request.eos_token = field(info, "eos_token").as_string();
    request.extra = field(c, "extra");
    request.now = now;
    const auto rendered = it->second->render(request);
    if (field(r, "output").is_string()) {
      if (!rendered.ok()) {
        ADD_FAILURE() << rendered.status().to_string();
        continue;
      }
      EXPECT_EQ(*rendered, field(r, "output").as_string());
      if (*rendered == field(r, "output").as_string()) ++outputs_equal;
      templates_rendered.insert(name);
    } else if (jinja2_outputs.count(key_of(r))) {
      SCOPED_TRACE("@huggingface/jinja failed (" + field(r, "error").as_string() +
                   "); comparing with jinja2");
      if (!rendered.ok()) {
        ADD_FAILURE() << rendered.status().to_string();
        continue;
      }
      EXPECT_EQ(*rendered, jinja2_outputs.at(key_of(r)));
      if (*rendered == jinja2_outputs.at(key_of(r))) ++jinja2_equal;
      templates_rendered.insert(name);
    } else {
      const std::string reference_error = field(r, "error").as_string();
      if (rendered.ok()) {
        ADD_FAILURE() << "the reference failed with: " << reference_error;
        continue;
      }
      const std::string& message = rendered.status().message();
      const std::string raised = "the template raised an exception: ";
      const std::size_t at = message.find(raised);
      if (at != std::string::npos) {
        EXPECT_EQ(message.substr(at + raised.size()), reference_error);
      }
      ++errors_agree;
    }
  }
  std::printf(
      "chat reference: %d renderings (templates x cases x add_generation_prompt): %d "
      "equal @huggingface/jinja's output, %d equal jinja2's where @huggingface/jinja "
      "failed, %d errors in all three, %d unsupported; %zu templates rendered\n",
      total, outputs_equal, jinja2_equal, errors_agree, unsupported, templates_rendered.size());
  EXPECT_EQ(outputs_equal + jinja2_equal + errors_agree + unsupported, total);
}

}  // namespace
}  // namespace tessera::chat
