// NFC and NFD against the Unicode 15.0 conformance file NormalizationTest.txt (Debian
// package unicode-data, /usr/share/unicode/NormalizationTest.txt.bz2, read through bzcat).
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "core/unicode/normalize.h"
#include "core/unicode/unicode_data.h"
#include "core/unicode/utf8.h"

namespace tessera::unicode {
namespace {

constexpr const char* kNormalizationTest = "/usr/share/unicode/NormalizationTest.txt.bz2";

std::vector<std::string> read_lines() {
  std::vector<std::string> lines;
  FILE* pipe = popen((std::string("bzcat ") + kNormalizationTest).c_str(), "r");
  if (!pipe) return lines;
  char buffer[4096];
  while (fgets(buffer, sizeof buffer, pipe)) lines.emplace_back(buffer);
  pclose(pipe);
  return lines;
}

// "1E0A 0323" -> UTF-8.
std::string field_to_utf8(const std::string& field) {
  std::istringstream in(field);
  std::string hex, out;
  while (in >> hex) append_utf8(static_cast<char32_t>(std::stoul(hex, nullptr, 16)), out);
  return out;
}

TEST(NormalizationConformance, EveryLineOfNormalizationTest) {
  ASSERT_TRUE(std::filesystem::exists(kNormalizationTest))
      << kNormalizationTest
      << " is missing: install Debian's unicode-data (scripts/install-deps.sh)";
  const auto lines = read_lines();
  ASSERT_GT(lines.size(), 19000u) << "could not read " << kNormalizationTest << " with bzcat";
  std::set<char32_t> part1;
  bool in_part1 = false;
  int checked = 0;
  for (const std::string& line : lines) {
    if (line.rfind("@Part", 0) == 0) {
      in_part1 = line.rfind("@Part1", 0) == 0;
      continue;
    }
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> c;
    std::istringstream in(line);
    std::string field;
    for (int i = 0; i < 5 && std::getline(in, field, ';'); ++i) c.push_back(field_to_utf8(field));
    ASSERT_EQ(c.size(), 5u) << line;
    if (in_part1) part1.insert(static_cast<char32_t>(std::stoul(line, nullptr, 16)));
    for (int i : {0, 1, 2}) EXPECT_EQ(nfc(c[i]), c[1]) << "NFC of c" << i + 1 << ": " << line;
    for (int i : {3, 4}) EXPECT_EQ(nfc(c[i]), c[3]) << "NFC of c" << i + 1 << ": " << line;
    for (int i : {0, 1, 2}) EXPECT_EQ(nfd(c[i]), c[2]) << "NFD of c" << i + 1 << ": " << line;
    for (int i : {3, 4}) EXPECT_EQ(nfd(c[i]), c[4]) << "NFD of c" << i + 1 << ": " << line;
    ++checked;
  }
  EXPECT_GT(checked, 19000);
  // Every code point not in Part 1 is its own NFC and NFD.
  for (char32_t cp = 0; cp < 0x110000; ++cp) {
    if ((cp >= 0xD800 && cp <= 0xDFFF) || part1.count(cp)) continue;
    std::string text;
    append_utf8(cp, text);
    ASSERT_EQ(nfc(text), text) << std::hex << static_cast<uint32_t>(cp);
    ASSERT_EQ(nfd(text), text) << std::hex << static_cast<uint32_t>(cp);
  }
}

}  // namespace
}  // namespace tessera::unicode
