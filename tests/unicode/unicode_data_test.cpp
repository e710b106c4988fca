// Spot checks of the generated tables against UnicodeData.txt / PropList.txt facts, and
// the UTF-8 encoder's round trips.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/unicode/unicode_data.h"
#include "core/unicode/utf8.h"

namespace tessera::unicode {
namespace {

TEST(UnicodeData, GeneralCategories) {
  EXPECT_STREQ(unicode_version(), "15.0.0");
  EXPECT_STREQ(general_category(U'A'), "Lu");
  EXPECT_STREQ(general_category(U'z'), "Ll");
  EXPECT_STREQ(general_category(0x01C5), "Lt");  // Dž
  EXPECT_STREQ(general_category(0x02B0), "Lm");
  EXPECT_STREQ(general_category(0x4E00), "Lo");  // 一
  EXPECT_STREQ(general_category(0x9FFF), "Lo");  // inside the CJK range of UnicodeData.txt
  EXPECT_STREQ(general_category(0x0301), "Mn");
  EXPECT_STREQ(general_category(0x0663), "Nd");  // ٣
  EXPECT_STREQ(general_category(0x2162), "Nl");  // Ⅲ
  EXPECT_STREQ(general_category(0x00BD), "No");  // ½
  EXPECT_STREQ(general_category(U'_'), "Pc");
  EXPECT_STREQ(general_category(0x3002), "Po");  // 。
  EXPECT_STREQ(general_category(U'$'), "Sc");
  EXPECT_STREQ(general_category(0x1F600), "So");
  EXPECT_STREQ(general_category(0x3000), "Zs");
  EXPECT_STREQ(general_category(0x2028), "Zl");
  EXPECT_STREQ(general_category(0x200D), "Cf");
  EXPECT_STREQ(general_category(0xE000), "Co");
  EXPECT_STREQ(general_category(0xD800), "Cs");
  EXPECT_STREQ(general_category(0x0378), "Cn");
  EXPECT_STREQ(general_category(0x110000), "Cn");
}

TEST(UnicodeData, FlagsCombineCategoryAndWhiteSpace) {
  EXPECT_EQ(flags_of(U'A'), kLetter | kUppercase);
  EXPECT_EQ(flags_of(U'7'), kNumber | kDigit);
  EXPECT_EQ(flags_of(U' '), kSeparator | kWhitespace);
  EXPECT_EQ(flags_of(U'\n'), kOther | kWhitespace);
  EXPECT_EQ(flags_of(0x0085), kOther | kWhitespace);  // NEL: White_Space, Cc
  EXPECT_EQ(flags_of(0x200B), kOther);                // ZERO WIDTH SPACE is not White_Space
  EXPECT_EQ(flags_of(0xFEFF), kOther);
  EXPECT_EQ(flags_of(0x0301), kMark);
  EXPECT_EQ(flags_of(U'!'), kPunctuation);
  EXPECT_EQ(flags_of(U'+'), kSymbol);
  int white_space = 0;
  for (char32_t cp = 0; cp < 0x110000; ++cp) white_space += is_white_space(cp);
  EXPECT_EQ(white_space, 25);  // PropList.txt 15.0: 25 White_Space code points
}

TEST(UnicodeData, CaseMappingsAndFolding) {
  EXPECT_EQ(simple_lowercase(U'A'), U'a');
  EXPECT_EQ(simple_uppercase(U'a'), U'A');
  EXPECT_EQ(simple_lowercase(0x0130), U'i');       // İ
  EXPECT_EQ(simple_uppercase(0x00DF), 0x00DFu);    // ß has no simple uppercase
  EXPECT_EQ(simple_uppercase(0x03C2), 0x03A3u);    // ς -> Σ
  EXPECT_EQ(simple_lowercase(0x10400), 0x10428u);  // Deseret
  EXPECT_EQ(simple_casefold(0x017F), U's');        // ſ
  EXPECT_EQ(simple_casefold(0x212A), U'k');        // Kelvin sign
  EXPECT_EQ(simple_casefold(0x1E9E), 0x00DFu);     // ẞ
  EXPECT_EQ(simple_casefold(U'7'), U'7');
}

TEST(Utf8, RoundTripsAndOffsets) {
  const std::string text = "a\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80";  // a é € 😀
  std::vector<char32_t> cps;
  std::vector<uint32_t> offsets;
  decode_utf8(text, cps, &offsets);
  EXPECT_EQ(cps, (std::vector<char32_t>{U'a', 0xE9, 0x20AC, 0x1F600}));
  EXPECT_EQ(offsets, (std::vector<uint32_t>{0, 1, 3, 6, 10}));
  EXPECT_EQ(to_utf8(cps.data(), cps.size()), text);
  // The llama.cpp rule reads surrogates and values past U+10FFFF; encoding gives the bytes back.
  for (const std::string bytes : {"\xED\xA0\x80", "\xF4\x90\x80\x80", "\xF7\xBF\xBF\xBF"}) {
    decode_utf8(bytes, cps);
    ASSERT_EQ(cps.size(), 1u);
    EXPECT_EQ(to_utf8(cps.data(), 1), bytes);
  }
  std::string out;
  append_utf8(0x200000, out);
  EXPECT_EQ(out, "\xEF\xBF\xBD");
  decode_utf8("", cps, &offsets);
  EXPECT_TRUE(cps.empty());
  EXPECT_EQ(offsets, (std::vector<uint32_t>{0}));
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

TEST(UnicodeData, CommittedTablesAreWhatTheGeneratorWrites) {
  const std::string source = TESSERA_SOURCE_DIR;
  const std::string output = std::string(TESSERA_BINARY_DIR) + "/unicode_tables_regenerated.cpp";
  ASSERT_TRUE(std::filesystem::exists("/usr/share/unicode/UnicodeData.txt"))
      << "install Debian's unicode-data (scripts/install-deps.sh)";
  const std::string command = "/usr/bin/python3 " + source +
                              "/scripts/gen-unicode-tables.py /usr/share/unicode " + output +
                              " > /dev/null";
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
  EXPECT_TRUE(read_file(output) == read_file(source + "/core/unicode/unicode_tables.cpp"))
      << "core/unicode/unicode_tables.cpp is stale: rerun scripts/gen-unicode-tables.py";
  std::filesystem::remove(output);
}

}  // namespace
}  // namespace tessera::unicode
