#include "core/config/toml_nesting.h"

#include <cstddef>
#include <vector>

namespace tessera {
namespace {

// Characters that end a bare key. Anything else counts as part of one, so
// keys toml++ may accept beyond TOML 1.0's [A-Za-z0-9_-] are still counted.
bool ends_bare_key(char c) {
  switch (c) {
    case ' ':
    case '\t':
    case '\r':
    case '\n':
    case '\0':
    case '.':
    case '=':
    case '[':
    case ']':
    case '{':
    case '}':
    case ',':
    case '#':
    case '"':
    case '\'':
      return true;
    default:
      return false;
  }
}

bool ends_scalar(char c) {
  return c == ',' || c == ']' || c == '}' || c == '#' || c == '\n' || c == '\r' || c == '\0';
}

class NestingScanner {
 public:
  NestingScanner(std::string_view text, int max_depth) : text_(text), max_(max_depth) {}

  // The offset of the first key or value nested deeper than max_depth, or
  // npos (also when the text stops being TOML before that).
  std::size_t find_too_deep() {
    int table_depth = 0;  // of the last [table] or [[array of tables]] header
    for (;;) {
      skip_blank_lines();
      if (at_end()) return npos;
      const std::size_t start = pos_;
      if (peek() == '[') {
        ++pos_;
        const bool array_of_tables = peek() == '[';
        if (array_of_tables) ++pos_;
        const int parts = scan_key();
        if (parts == 0) return npos;
        // [[a.b]]: b is an array whose elements are tables, one level more.
        table_depth = parts + (array_of_tables ? 1 : 0);
        if (table_depth > max_) return start;
        skip_blank();
        if (peek() != ']') return npos;
        ++pos_;
        if (array_of_tables) {
          if (peek() != ']') return npos;
          ++pos_;
        }
        continue;
      }
      const int parts = scan_key();
      if (parts == 0) return npos;
      skip_blank();
      if (peek() != '=') return npos;
      ++pos_;
      if (table_depth + parts > max_) return start;
      const Outcome outcome = scan_value(table_depth + parts);
      if (outcome == Outcome::kTooDeep) return too_deep_at_;
      if (outcome == Outcome::kNotToml) return npos;
    }
  }

  static constexpr std::size_t npos = std::string_view::npos;

 private:
  enum class Outcome { kOk, kTooDeep, kNotToml };
  struct Container {
    bool table;  // an inline table; else an array
    int depth;   // of the container node itself
  };

  bool at_end() const { return pos_ >= text_.size(); }
  char peek(std::size_t ahead = 0) const {
    return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0';
  }
  void skip_blank() {
    while (peek() == ' ' || peek() == '\t') ++pos_;
  }
  // Blanks, line breaks and comments: what may separate lines, and the
  // elements of an array.
  void skip_blank_lines() {
    for (;;) {
      skip_blank();
      if (peek() == '#') {
        while (!at_end() && peek() != '\n') ++pos_;
      } else if (peek() == '\n' || peek() == '\r') {
        ++pos_;
      } else {
        return;
      }
    }
  }

  // At a quote: skips a basic, literal or multi-line string; false when it
  // does not end.
  bool skip_string() {
    const char quote = peek();
    const bool escapes = quote == '"';
    if (peek(1) == quote && peek(2) == quote) {
      pos_ += 3;
      for (;;) {
        if (at_end()) return false;
        if (escapes && peek() == '\\') {
          pos_ += 2;
        } else if (peek() == quote && peek(1) == quote && peek(2) == quote) {
          pos_ += 3;
          while (peek() == quote) ++pos_;  // up to two quotes end the content
          return true;
        } else {
          ++pos_;
        }
      }
    }
    ++pos_;
    for (;;) {
      if (at_end() || peek() == '\n') return false;
      if (escapes && peek() == '\\') {
        pos_ += 2;
      } else if (peek() == quote) {
        ++pos_;
        return true;
      } else {
        ++pos_;
      }
    }
  }

  // A dotted key: the number of its parts, 0 when there is no key here.
  int scan_key() {
    int parts = 0;
    for (;;) {
      skip_blank();
      if (peek() == '"' || peek() == '\'') {
        if (!skip_string()) return 0;
      } else {
        const std::size_t begin = pos_;
        while (!ends_bare_key(peek())) ++pos_;
        if (pos_ == begin) return 0;
      }
      ++parts;
      skip_blank();
      if (peek() != '.') return parts;
      ++pos_;
    }
  }

  // After "key =": one value whose node sits at `depth`, arrays and inline
  // tables walked with an explicit stack.
  Outcome scan_value(int depth) {
    std::vector<Container> open;
    bool value_read = false;
    for (;;) {
      if (!value_read) {
        skip_blank();
        const std::size_t start = pos_;
        if (peek() == '[' || peek() == '{') {
          const bool table = peek() == '{';
          ++pos_;
          open.push_back({table, depth});
          skip_blank_lines();
          if (peek() == (table ? '}' : ']')) {
            ++pos_;
            open.pop_back();
          } else if (table) {
            const Outcome next = next_table_member(open.back(), depth);
            if (next != Outcome::kOk) return next;
            continue;
          } else {
            depth = open.back().depth + 1;
            if (depth > max_) return too_deep(start);
            continue;
          }
        } else if (peek() == '"' || peek() == '\'') {
          if (!skip_string()) return Outcome::kNotToml;
        } else {
          const std::size_t begin = pos_;
          while (!ends_scalar(peek())) ++pos_;
          if (pos_ == begin) return Outcome::kNotToml;
        }
        value_read = true;
      }
      // A value ended: close the containers that end here, or move to the
      // next element of the innermost one.
      if (open.empty()) return Outcome::kOk;
      const Container top = open.back();
      skip_blank_lines();
      if (peek() == (top.table ? '}' : ']')) {
        ++pos_;
        open.pop_back();
        continue;
      }
      if (peek() != ',') return Outcome::kNotToml;
      ++pos_;
      skip_blank_lines();
      if (!top.table && peek() == ']') {  // a trailing comma
        ++pos_;
        open.pop_back();
        continue;
      }
      if (top.table) {
        const Outcome next = next_table_member(top, depth);
        if (next != Outcome::kOk) return next;
      } else {
        depth = top.depth + 1;
      }
      value_read = false;
    }
  }

  // Inside an inline table: reads "key =" and sets `depth` for its value.
  Outcome next_table_member(const Container& table, int& depth) {
    skip_blank();
    const std::size_t start = pos_;
    const int parts = scan_key();
    if (parts == 0) return Outcome::kNotToml;
    skip_blank();
    if (peek() != '=') return Outcome::kNotToml;
    ++pos_;
    depth = table.depth + parts;
    if (depth > max_) return too_deep(start);
    return Outcome::kOk;
  }

  Outcome too_deep(std::size_t at) {
    too_deep_at_ = at;
    return Outcome::kTooDeep;
  }

  std::string_view text_;
  int max_;
  std::size_t pos_ = 0;
  std::size_t too_deep_at_ = npos;
};

}  // namespace

Status check_toml_nesting(std::string_view text, const std::string& source_name, int max_depth) {
  NestingScanner scanner(text, max_depth);
  const std::size_t at = scanner.find_too_deep();
  if (at == NestingScanner::npos) return ok_status();
  std::size_t line = 1;
  std::size_t line_start = 0;
  for (std::size_t i = 0; i < at; ++i)
    if (text[i] == '\n') {
      ++line;
      line_start = i + 1;
    }
  return invalid_argument(
      source_name + ":" + std::to_string(line) + ":" + std::to_string(at - line_start + 1) +
      ": tables, arrays or inline tables nest more than " + std::to_string(max_depth) +
      " levels deep here; a tessera config needs three at most "
      "([cache.codec] then plugin = ...)");
}

}  // namespace tessera
