// What `tessera bench` prints: a markdown table (llama-bench's look) for
// people, or CSV for machines, from rows of already formatted cells.
#pragma once

#include <string>
#include <vector>

namespace tessera::cli {

using TableRow = std::vector<std::string>;

// "| a | b |" lines under a header and an alignment row; `right_aligned` per
// column (numbers).
std::string markdown_table(const TableRow& header, const std::vector<bool>& right_aligned,
                           const std::vector<TableRow>& rows);

// RFC 4180 lines (LF-terminated, as the CSV bench always printed), fields
// quoted where they need it.
std::string csv_lines(const TableRow& header, const std::vector<TableRow>& rows);

// printf-style formatting into a string, for cells.
std::string format(const char* pattern, ...) __attribute__((format(printf, 1, 2)));

}  // namespace tessera::cli
