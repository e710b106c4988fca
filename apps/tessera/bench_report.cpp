#include "apps/tessera/bench_report.h"

#include <cstdarg>
#include <cstdio>

#include "apps/tessera/sweep/csv_table.h"

namespace tessera::cli {
namespace {

std::string markdown_line(const TableRow& cells) {
  std::string line = "|";
  for (const std::string& cell : cells) line += " " + cell + " |";
  return line + "\n";
}

std::string csv_line(const TableRow& cells) {
  std::string line;
  for (std::size_t i = 0; i < cells.size(); ++i)
    line += (i ? "," : "") + sweep::csv_field(cells[i]);
  return line + "\n";
}

}  // namespace

std::string markdown_table(const TableRow& header, const std::vector<bool>& right_aligned,
                           const std::vector<TableRow>& rows) {
  std::string text = markdown_line(header) + "|";
  for (std::size_t i = 0; i < header.size(); ++i)
    text += i < right_aligned.size() && right_aligned[i] ? "---:|" : "---|";
  text += "\n";
  for (const TableRow& row : rows) text += markdown_line(row);
  return text;
}

std::string csv_lines(const TableRow& header, const std::vector<TableRow>& rows) {
  std::string text = csv_line(header);
  for (const TableRow& row : rows) text += csv_line(row);
  return text;
}

std::string format(const char* pattern, ...) {
  char text[256];
  va_list args;
  va_start(args, pattern);
  std::vsnprintf(text, sizeof text, pattern, args);
  va_end(args);
  return text;
}

}  // namespace tessera::cli
