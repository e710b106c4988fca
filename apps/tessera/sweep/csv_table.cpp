#include "apps/tessera/sweep/csv_table.h"

#include <set>
#include <string_view>

#include "core/io/output_file.h"
#include "core/util/strings.h"

namespace tessera::sweep {
namespace {

std::string cell_text(const CsvCell& cell) {
  if (const auto* text = std::get_if<std::string>(&cell)) return csv_field(*text);
  if (const auto* number = std::get_if<double>(&cell)) return shortest_decimal(*number);
  return "";
}

void append_line(std::string& out, const std::vector<std::string>& fields) {
  // A lone empty field would make a blank line, which readers skip as no record.
  if (fields.size() == 1 && fields[0].empty()) {
    out += "\"\"\r\n";
    return;
  }
  for (std::size_t i = 0; i < fields.size(); ++i) {
    if (i) out += ',';
    out += fields[i];
  }
  out += "\r\n";
}

}  // namespace

std::string csv_field(std::string_view text) {
  if (text.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(text);
  std::string quoted = "\"";
  for (const char c : text) {
    if (c == '"') quoted += '"';
    quoted += c;
  }
  return quoted + '"';
}

Result<CsvTable> CsvTable::create(std::vector<std::string> columns) {
  if (columns.empty()) return invalid_argument("a CSV table needs at least one column");
  std::set<std::string_view> seen;
  for (const auto& name : columns) {
    if (!seen.insert(name).second)
      return invalid_argument("CSV column '" + name + "' is named twice");
  }
  return CsvTable(std::move(columns));
}

std::size_t CsvTable::column_index(const std::string& name) const {
  std::size_t i = 0;
  while (i < columns_.size() && columns_[i] != name) ++i;
  return i;
}

Status CsvTable::add_row(std::vector<CsvCell> cells) {
  if (cells.size() != columns_.size())
    return invalid_argument("a CSV row has " + std::to_string(cells.size()) +
                            " cells; the table has " + std::to_string(columns_.size()) +
                            " columns");
  rows_.push_back(std::move(cells));
  return ok_status();
}

Status CsvTable::add_named_row(const std::vector<std::pair<std::string, CsvCell>>& named_cells) {
  std::vector<CsvCell> row(columns_.size());
  std::vector<bool> given(columns_.size(), false);
  for (const auto& [name, cell] : named_cells) {
    const std::size_t index = column_index(name);
    if (index == columns_.size())
      return invalid_argument("no CSV column named '" + name + "' (columns: " + join(columns_) +
                              ")");
    if (given[index]) return invalid_argument("CSV column '" + name + "' given twice in one row");
    given[index] = true;
    row[index] = cell;
  }
  rows_.push_back(std::move(row));
  return ok_status();
}

std::string CsvTable::to_csv() const {
  std::string out;
  std::vector<std::string> fields;
  for (const auto& name : columns_) fields.push_back(csv_field(name));
  append_line(out, fields);
  for (const auto& row : rows_) {
    fields.clear();
    for (const auto& cell : row) fields.push_back(cell_text(cell));
    append_line(out, fields);
  }
  return out;
}

Status CsvTable::write(const std::string& path) const {
  ASSIGN_OR_RETURN(OutputFile file, OutputFile::create(path, "CSV file"));
  RETURN_IF_ERROR(file.write(to_csv()));
  return file.commit();
}

}  // namespace tessera::sweep
