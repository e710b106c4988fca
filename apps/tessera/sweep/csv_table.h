// A table of sweep results written as RFC 4180 CSV: a header row of column
// names, then one row per measurement. Cells are text, numbers or missing.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "core/status/status.h"

namespace tessera::sweep {

// std::monostate is a missing value (an empty field). A double is written
// with the shortest text that reads back as exactly that number ("0.1",
// "1e-05", "64"); NaN and infinities as "nan", "inf", "-inf".
using CsvCell = std::variant<std::monostate, std::string, double>;

class CsvTable {
 public:
  // InvalidArgument for no columns or a name given twice.
  static Result<CsvTable> create(std::vector<std::string> columns);

  const std::vector<std::string>& columns() const { return columns_; }
  std::size_t row_count() const { return rows_.size(); }

  // One cell per column, in column order. InvalidArgument if the count differs.
  Status add_row(std::vector<CsvCell> cells);
  // Cells by column name, in any order; columns not named are missing.
  // InvalidArgument for an unknown or repeated name (nothing is added).
  Status add_named_row(const std::vector<std::pair<std::string, CsvCell>>& named_cells);

  // The whole table; every line ends with CRLF, as RFC 4180 asks.
  std::string to_csv() const;
  // Writes to_csv() to a temporary beside `path`, then renames it into place.
  // Errors name the path (see OutputFile::create in core/io/output_file.h).
  Status write(const std::string& path) const;

 private:
  explicit CsvTable(std::vector<std::string> columns) : columns_(std::move(columns)) {}
  // The column's index, or columns_.size() if there is none of that name.
  std::size_t column_index(const std::string& name) const;

  std::vector<std::string> columns_;
  std::vector<std::vector<CsvCell>> rows_;
};

// One field as RFC 4180 writes it: quoted (with quotes doubled) when it holds
// a comma, a double quote, CR or LF; otherwise as is.
std::string csv_field(std::string_view text);

}  // namespace tessera::sweep
