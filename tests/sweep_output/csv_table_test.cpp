// The CSV a sweep writes: RFC 4180 quoting, numbers that read back exactly,
// empty fields for missing values, and write errors that name the path.
#include "apps/tessera/sweep/csv_table.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <bit>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <limits>

#include "core/util/strings.h"
#include "tests/gguf/gguf_test_util.h"

namespace tessera::sweep {
namespace {

using ::testing::HasSubstr;
using testing::TempDir;

CsvTable table_of(std::vector<std::string> columns) {
  auto table = CsvTable::create(std::move(columns));
  EXPECT_TRUE(table.ok()) << table.status().to_string();
  return std::move(table).value();
}

std::string file_text(const std::string& path) {
  const auto bytes = testing::read_bytes(path);
  return std::string(bytes.begin(), bytes.end());
}

// Names in `dir` other than `keep`: a failed or finished write leaves no temporary.
std::vector<std::string> other_files(const std::string& dir, const std::string& keep = "") {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name != keep) names.push_back(name);
  }
  return names;
}

TEST(CsvField, QuotesOnlyWhenNeeded) {
  EXPECT_EQ(csv_field("plain text"), "plain text");
  EXPECT_EQ(csv_field(""), "");
  EXPECT_EQ(csv_field("a,b"), "\"a,b\"");
  EXPECT_EQ(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
  EXPECT_EQ(csv_field("two\nlines"), "\"two\nlines\"");
  EXPECT_EQ(csv_field("cr\rhere"), "\"cr\rhere\"");
  EXPECT_EQ(csv_field("\""), "\"\"\"\"");
  EXPECT_EQ(csv_field(" spaces stay "), " spaces stay ");
}

TEST(CsvTable, HeaderKeepsColumnOrderAndLinesEndWithCrlf) {
  CsvTable table = table_of({"codec", "batch", "tokens/s"});
  ASSERT_TRUE(table.add_row({std::string("int8"), 4.0, 1234.5}).ok());
  EXPECT_EQ(table.to_csv(), "codec,batch,tokens/s\r\nint8,4,1234.5\r\n");
  EXPECT_EQ(table.row_count(), 1u);
  EXPECT_EQ(table.columns(), (std::vector<std::string>{"codec", "batch", "tokens/s"}));
}

TEST(CsvTable, QuotesHeaderAndTextCells) {
  CsvTable table = table_of({"name", "note, with comma"});
  ASSERT_TRUE(table.add_row({std::string("lattice \"e8\""), std::string("a\r\nb")}).ok());
  EXPECT_EQ(table.to_csv(), "name,\"note, with comma\"\r\n\"lattice \"\"e8\"\"\",\"a\r\nb\"\r\n");
}

TEST(CsvTable, NumbersAreTheShortestTextThatReadsBackExactly) {
  const std::vector<double> values = {0.1,
                                      1.0 / 3.0,
                                      1e-5,
                                      64,
                                      -2.5,
                                      123456789.125,
                                      6.02214076e23,
                                      std::numeric_limits<double>::denorm_min(),
                                      std::numeric_limits<double>::max(),
                                      std::nextafter(1.0, 2.0)};
  CsvTable table = table_of({"x"});
  for (double v : values) ASSERT_TRUE(table.add_row({v}).ok());
  const std::string csv = table.to_csv();

  std::vector<std::string> lines = split(csv, '\n');
  ASSERT_EQ(lines.size(), values.size() + 2);  // header, rows, "" after the last CRLF
  for (std::size_t i = 0; i < values.size(); ++i) {
    std::string field = lines[i + 1];
    ASSERT_FALSE(field.empty());
    ASSERT_EQ(field.back(), '\r');
    field.pop_back();
    EXPECT_EQ(field, shortest_decimal(values[i]));
    const double back = std::strtod(field.c_str(), nullptr);
    EXPECT_EQ(std::bit_cast<uint64_t>(back), std::bit_cast<uint64_t>(values[i])) << field;
  }
  EXPECT_THAT(csv, HasSubstr("\r\n0.1\r\n"));
  EXPECT_THAT(csv, HasSubstr("\r\n64\r\n"));
  EXPECT_THAT(csv, HasSubstr("\r\n1e-05\r\n"));
}

TEST(CsvTable, NegativeZeroNanAndInfinitiesKeepTheirMeaning) {
  CsvTable table = table_of({"a", "b", "c", "d"});
  ASSERT_TRUE(table
                  .add_row({-0.0, std::numeric_limits<double>::quiet_NaN(),
                            std::numeric_limits<double>::infinity(),
                            -std::numeric_limits<double>::infinity()})
                  .ok());
  EXPECT_EQ(table.to_csv(), "a,b,c,d\r\n-0,nan,inf,-inf\r\n");
}

TEST(CsvTable, MissingCellsAreEmptyFields) {
  CsvTable table = table_of({"a", "b", "c"});
  ASSERT_TRUE(table.add_row({std::monostate{}, 2.0, std::monostate{}}).ok());
  ASSERT_TRUE(table.add_named_row({{"c", std::string("z")}}).ok());
  ASSERT_TRUE(table.add_named_row({}).ok());
  EXPECT_EQ(table.to_csv(), "a,b,c\r\n,2,\r\n,,z\r\n,,\r\n");
}

TEST(CsvTable, ALoneEmptyFieldIsQuotedSoTheRecordIsNotABlankLine) {
  CsvTable table = table_of({"only"});
  ASSERT_TRUE(table.add_row({std::monostate{}}).ok());
  ASSERT_TRUE(table.add_row({std::string("")}).ok());
  EXPECT_EQ(table.to_csv(), "only\r\n\"\"\r\n\"\"\r\n");
}

TEST(CsvTable, NamedCellsLandInTheirColumnsWhateverTheOrder) {
  CsvTable table = table_of({"codec", "batch", "ppl"});
  ASSERT_TRUE(
      table.add_named_row({{"ppl", 7.25}, {"codec", std::string("int4")}, {"batch", 8.0}}).ok());
  EXPECT_EQ(table.to_csv(), "codec,batch,ppl\r\nint4,8,7.25\r\n");
}

TEST(CsvTable, RefusesBadColumnsAndRows) {
  auto none = CsvTable::create({});
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), StatusCode::kInvalidArgument);

  auto twice = CsvTable::create({"a", "b", "a"});
  ASSERT_FALSE(twice.ok());
  EXPECT_THAT(twice.status().message(), HasSubstr("'a' is named twice"));

  CsvTable table = table_of({"a", "b"});
  const Status short_row = table.add_row({1.0});
  EXPECT_EQ(short_row.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(short_row.message(), HasSubstr("1 cells; the table has 2 columns"));

  const Status unknown = table.add_named_row({{"a", 1.0}, {"zz", 2.0}});
  EXPECT_EQ(unknown.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(unknown.message(), HasSubstr("no CSV column named 'zz' (columns: a, b)"));

  const Status repeated = table.add_named_row({{"a", 1.0}, {"a", 2.0}});
  EXPECT_THAT(repeated.message(), HasSubstr("'a' given twice"));
  EXPECT_EQ(table.row_count(), 0u);
}

TEST(CsvTable, WritesTheFileAndReplacesAnOldOne) {
  TempDir dir;
  const std::string path = dir.file("results.csv");
  CsvTable first = table_of({"x"});
  ASSERT_TRUE(first.add_row({1.0}).ok());
  ASSERT_TRUE(first.write(path).ok());
  EXPECT_EQ(file_text(path), "x\r\n1\r\n");

  CsvTable second = table_of({"y", "z"});
  ASSERT_TRUE(second.add_row({std::string("a,b"), 0.5}).ok());
  const Status status = second.write(path);
  ASSERT_TRUE(status.ok()) << status.to_string();
  EXPECT_EQ(file_text(path), second.to_csv());
  EXPECT_TRUE(
      other_files(std::filesystem::path(path).parent_path().string(), "results.csv").empty());
}

TEST(CsvTable, AMissingDirectoryIsNotFoundNamingThePath) {
  TempDir dir;
  const std::string path = dir.file("no/such/dir/results.csv");
  const Status status = table_of({"x"}).write(path);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.code(), StatusCode::kNotFound);
  EXPECT_THAT(status.message(), HasSubstr("CSV file '" + path + "'"));
  EXPECT_THAT(status.message(), HasSubstr("does not exist"));
}

TEST(CsvTable, AParentThatIsAFileIsNotFoundNamingThePath) {
  TempDir dir;
  const std::string parent = dir.write("plain", {'x'});
  const Status status = table_of({"x"}).write(parent + "/results.csv");
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.code(), StatusCode::kNotFound);
  EXPECT_THAT(status.message(), HasSubstr(parent + "/results.csv"));
}

TEST(CsvTable, ADirectoryInTheWayFailsAndLeavesNoTemporary) {
  TempDir dir;
  const std::string path = dir.file("taken");
  ASSERT_TRUE(std::filesystem::create_directory(path));
  const Status status = table_of({"x"}).write(path);
  ASSERT_FALSE(status.ok());
  EXPECT_THAT(status.message(), HasSubstr("'" + path + "'"));
  EXPECT_THAT(other_files(std::filesystem::path(path).parent_path().string(), "taken"),
              ::testing::IsEmpty());
}

TEST(CsvTable, AReadOnlyDirectoryIsAFailedPreconditionNamingThePath) {
  if (::geteuid() == 0) GTEST_SKIP() << "root may write into a read-only directory";
  TempDir dir;
  const std::string locked = dir.file("locked");
  ASSERT_TRUE(std::filesystem::create_directory(locked));
  std::filesystem::permissions(
      locked, std::filesystem::perms::owner_read | std::filesystem::perms::owner_exec);
  const Status status = table_of({"x"}).write(locked + "/results.csv");
  std::filesystem::permissions(locked, std::filesystem::perms::owner_all);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(), HasSubstr(locked + "/results.csv"));
  EXPECT_THAT(status.message(), HasSubstr("Permission denied"));
}

}  // namespace
}  // namespace tessera::sweep
