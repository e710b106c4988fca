#include "core/chat/lexer.h"

#include <algorithm>
#include <cstdint>

namespace tessera::chat {

std::string where(const std::string& origin, SourcePos pos) {
  return origin + ":" + std::to_string(pos.line) + ":" + std::to_string(pos.column) + ": ";
}

namespace {

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}
bool is_name_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

class Lexer {
 public:
  Lexer(std::string_view source, const std::string& origin) : src_(source), origin_(origin) {
    if (!src_.empty() && src_.back() == '\n') src_.remove_suffix(1);
    line_starts_.push_back(0);
    for (std::size_t i = 0; i < src_.size(); ++i)
      if (src_[i] == '\n') line_starts_.push_back(i + 1);
  }

  Result<std::vector<Token>> run() {
    std::size_t i = 0;
    bool strip_next_text = false;  // a -}} / -%} / -#} came before
    bool trim_newline = false;     // trim_blocks after %} / #}
    while (i <= src_.size()) {
      const std::size_t tag = find_tag(i);
      std::size_t text_begin = i;
      std::size_t text_end = tag;
      if (trim_newline && text_begin < text_end && src_[text_begin] == '\n') ++text_begin;
      if (strip_next_text)
        while (text_begin < text_end && is_space(src_[text_begin])) ++text_begin;
      strip_next_text = trim_newline = false;
      if (tag == src_.size()) {
        emit_text(text_begin, text_end);
        break;
      }
      const char type = src_[tag + 1];  // '{', '%' or '#'
      const char marker = tag + 2 < src_.size() ? src_[tag + 2] : '\0';
      if (marker == '-') {
        while (text_end > text_begin && is_space(src_[text_end - 1])) --text_end;
      } else if (type != '{' && marker != '+') {
        text_end = lstrip_block(text_begin, text_end);
      }
      emit_text(text_begin, text_end);
      std::size_t body = tag + 2 + ((marker == '-' || marker == '+') ? 1 : 0);
      std::size_t after = 0;
      bool right_strip = false, right_plus = false;
      if (type == '#') {
        const std::size_t close = src_.find("#}", body);
        if (close == std::string_view::npos) return error(tag, "unterminated comment: add '#}'");
        right_strip = close > body && src_[close - 1] == '-';
        right_plus = close > body && src_[close - 1] == '+';
        after = close + 2;
      } else {
        tokens_.push_back(
            {type == '{' ? Token::Kind::kOutputBegin : Token::Kind::kBlockBegin, "", pos(tag)});
        auto end = lex_expression(body, type == '{' ? '}' : '%', tag);
        if (!end.ok()) return end.status();
        after = *end;
        right_strip = src_[after - 3] == '-';
        right_plus = type == '%' && src_[after - 3] == '+';
      }
      strip_next_text = right_strip;
      trim_newline = type != '{' && !right_plus;
      i = after;
    }
    tokens_.push_back({Token::Kind::kEnd, "", pos(src_.size())});
    return std::move(tokens_);
  }

 private:
  SourcePos pos(std::size_t offset) const {
    auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
    const std::size_t line = static_cast<std::size_t>(it - line_starts_.begin());
    return {static_cast<int>(line), static_cast<int>(offset - line_starts_[line - 1] + 1)};
  }

  Status error(std::size_t offset, const std::string& message) const {
    return invalid_argument(where(origin_, pos(offset)) + message);
  }

  std::size_t find_tag(std::size_t from) const {
    for (std::size_t i = from; i + 1 < src_.size(); ++i)
      if (src_[i] == '{' && (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#'))
        return i;
    return src_.size();
  }

  // lstrip_blocks: drop spaces/tabs before the tag when only they separate it
  // from the start of its line.
  std::size_t lstrip_block(std::size_t text_begin, std::size_t text_end) const {
    std::size_t k = text_end;
    while (k > 0 && (src_[k - 1] == ' ' || src_[k - 1] == '\t')) --k;
    if (k != 0 && src_[k - 1] != '\n') return text_end;
    return std::max(k, text_begin);
  }

  void emit_text(std::size_t begin, std::size_t end) {
    if (begin < end)
      tokens_.push_back(
          {Token::Kind::kText, std::string(src_.substr(begin, end - begin)), pos(begin)});
  }

  // Lexes up to the closing "}}" or "%}" (an optional '-' or '+' before it);
  // returns the offset after it.
  Result<std::size_t> lex_expression(std::size_t i, char closer, std::size_t tag) {
    int brace_depth = 0;
    while (true) {
      while (i < src_.size() && is_space(src_[i])) ++i;
      if (i >= src_.size())
        return error(tag, std::string("unterminated tag: add '") + closer + "}'");
      const char c = src_[i];
      const auto closes_at = [&](std::size_t k) {
        return k + 1 < src_.size() && src_[k] == closer && src_[k + 1] == '}';
      };
      if (brace_depth == 0 && (c == '-' || (c == '+' && closer == '%')) && closes_at(i + 1)) ++i;
      if (brace_depth == 0 && closes_at(i)) {
        tokens_.push_back(
            {closer == '}' ? Token::Kind::kOutputEnd : Token::Kind::kBlockEnd, "", pos(i)});
        return i + 2;
      }
      const SourcePos at = pos(i);
      if (is_name_start(c)) {
        std::size_t k = i;
        while (k < src_.size() && (is_name_start(src_[k]) || is_digit(src_[k]))) ++k;
        tokens_.push_back({Token::Kind::kName, std::string(src_.substr(i, k - i)), at});
        i = k;
      } else if (is_digit(c)) {
        i = lex_number(i);
      } else if (c == '\'' || c == '"') {
        auto end = lex_string(i);
        if (!end.ok()) return end.status();
        i = *end;
      } else {
        static constexpr std::string_view kTwo[] = {"//", "**", "==", "!=", "<=", ">="};
        std::string op(1, c);
        for (std::string_view two : kTwo)
          if (src_.substr(i, 2) == two) op = std::string(two);
        if (op.size() == 1 && std::string_view("+-*/%~<>=()[]{},.:|").find(c) == std::string::npos)
          return error(i, std::string("unexpected character '") + c + "' in a tag");
        if (c == '{') ++brace_depth;
        if (c == '}') --brace_depth;
        tokens_.push_back({Token::Kind::kOperator, op, at});
        i += op.size();
      }
    }
  }

  std::size_t lex_number(std::size_t i) {
    const SourcePos at = pos(i);
    std::size_t k = i;
    bool is_float = false;
    while (k < src_.size() && (is_digit(src_[k]) || src_[k] == '_')) ++k;
    if (k + 1 < src_.size() && src_[k] == '.' && is_digit(src_[k + 1])) {
      is_float = true;
      ++k;
      while (k < src_.size() && is_digit(src_[k])) ++k;
    }
    if (k < src_.size() && (src_[k] == 'e' || src_[k] == 'E')) {
      std::size_t e = k + 1;
      if (e < src_.size() && (src_[e] == '+' || src_[e] == '-')) ++e;
      if (e < src_.size() && is_digit(src_[e])) {
        is_float = true;
        k = e;
        while (k < src_.size() && is_digit(src_[k])) ++k;
      }
    }
    std::string text(src_.substr(i, k - i));
    text.erase(std::remove(text.begin(), text.end(), '_'), text.end());
    tokens_.push_back({is_float ? Token::Kind::kFloat : Token::Kind::kInt, text, at});
    return k;
  }

  Result<std::size_t> lex_string(std::size_t i) {
    const char quote = src_[i];
    const SourcePos at = pos(i);
    std::string value;
    std::size_t k = i + 1;
    while (k < src_.size() && src_[k] != quote) {
      if (src_[k] != '\\' || k + 1 >= src_.size()) {
        value += src_[k++];
        continue;
      }
      const char e = src_[k + 1];
      k += 2;
      switch (e) {
        case 'n':
          value += '\n';
          break;
        case 't':
          value += '\t';
          break;
        case 'r':
          value += '\r';
          break;
        case 'b':
          value += '\b';
          break;
        case 'f':
          value += '\f';
          break;
        case 'v':
          value += '\v';
          break;
        case '0':
          value += '\0';
          break;
        case '\\':
          value += '\\';
          break;
        case '\'':
          value += '\'';
          break;
        case '"':
          value += '"';
          break;
        case '\n':
          break;  // a backslash-newline continues the line
        case 'x':
        case 'u':
        case 'U': {
          const std::size_t digits = e == 'x' ? 2 : e == 'u' ? 4 : 8;
          uint32_t cp = 0;
          for (std::size_t d = 0; d < digits; ++d, ++k) {
            const char h = k < src_.size() ? src_[k] : '\0';
            const int v = is_digit(h)              ? h - '0'
                          : (h >= 'a' && h <= 'f') ? h - 'a' + 10
                          : (h >= 'A' && h <= 'F') ? h - 'A' + 10
                                                   : -1;
            if (v < 0) return error(k, std::string("bad \\") + e + " escape in a string literal");
            cp = cp * 16 + static_cast<uint32_t>(v);
          }
          if (cp > 0x10FFFF) return error(k, "\\U escape beyond U+10FFFF");
          append_utf8(value, cp);
          break;
        }
        default:  // Python keeps unknown escapes as written
          value += '\\';
          value += e;
      }
    }
    if (k >= src_.size()) return error(i, std::string("unterminated string: add ") + quote);
    tokens_.push_back({Token::Kind::kString, std::move(value), at});
    return k + 1;
  }

  std::string_view src_;
  const std::string& origin_;
  std::vector<std::size_t> line_starts_;
  std::vector<Token> tokens_;
};

}  // namespace

Result<std::vector<Token>> tokenize(std::string_view source, const std::string& origin) {
  return Lexer(source, origin).run();
}

}  // namespace tessera::chat
