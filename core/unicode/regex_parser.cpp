#include "core/unicode/regex_parser.h"

#include <string>

#include "core/unicode/unicode_data.h"
#include "core/unicode/utf8.h"

namespace tessera::unicode::regex {
namespace {

using Kind = Node::Kind;

constexpr int kMaxRepeat = 100000;  // Oniguruma's ONIG_MAX_REPEAT_NUM
constexpr int kMaxNesting = 200;

uint32_t category_bit(GeneralCategory category) {
  return 1u << static_cast<int>(category);
}

// \p{...} names: the major classes, the 30 two-letter categories, and their long names.
bool category_mask_of(std::string_view name, uint32_t& mask) {
  struct Major {
    const char* short_name;
    const char* long_name;
  };
  static constexpr Major kMajors[] = {{"L", "Letter"},      {"M", "Mark"},   {"N", "Number"},
                                      {"P", "Punctuation"}, {"S", "Symbol"}, {"Z", "Separator"},
                                      {"C", "Other"}};
  for (const Major& major : kMajors) {
    if (name != major.short_name && name != major.long_name) continue;
    mask = 0;
    for (int i = 0; i < kGeneralCategoryCount; ++i) {
      if (general_category_name(static_cast<GeneralCategory>(i))[0] == major.short_name[0])
        mask |= 1u << i;
    }
    return true;
  }
  if (name == "LC" || name == "L&" || name == "Cased_Letter") {
    mask = category_bit(GeneralCategory::Lu) | category_bit(GeneralCategory::Ll) |
           category_bit(GeneralCategory::Lt);
    return true;
  }
  for (int i = 0; i < kGeneralCategoryCount; ++i) {
    if (name == general_category_name(static_cast<GeneralCategory>(i))) {
      mask = 1u << i;
      return true;
    }
  }
  return false;
}

ClassAtom range_atom(char32_t first, char32_t last) {
  ClassAtom atom;
  atom.ranges.push_back({first, last});
  return atom;
}

uint32_t word_categories() {
  uint32_t mask = 0;
  for (const char* major : {"L", "M", "N"}) {
    uint32_t m = 0;
    category_mask_of(major, m);
    mask |= m;
  }
  return mask | category_bit(GeneralCategory::Pc);
}

class Parser {
 public:
  explicit Parser(std::string_view pattern) : pattern_(pattern) {}

  Result<Ast> parse() {
    std::vector<char32_t> cps;
    decode_utf8(pattern_, cps, &offsets_, Utf8Errors::kWhatwg);
    for (size_t i = 0; i < cps.size(); ++i) {
      if (cps[i] == kReplacementCharacter && pattern_.substr(offsets_[i], 3) != "\xEF\xBF\xBD")
        return invalid_argument("pattern is not valid UTF-8 at byte " +
                                std::to_string(offsets_[i]));
    }
    cps_ = std::move(cps);
    auto root = parse_alternation(false, 0);
    if (!root.ok()) return root.status();
    if (pos_ < cps_.size()) {
      return invalid_argument("unbalanced ')' at offset " + std::to_string(offset()) +
                              " of pattern '" + std::string(pattern_) + "'");
    }
    Ast ast;
    ast.root = std::move(root).value();
    ast.sets = std::move(sets_);
    return ast;
  }

 private:
  size_t offset() const { return pos_ < cps_.size() ? offsets_[pos_] : pattern_.size(); }
  size_t offset_at(size_t pos) const { return pos < cps_.size() ? offsets_[pos] : pattern_.size(); }
  bool at_end() const { return pos_ >= cps_.size(); }
  char32_t peek(size_t ahead = 0) const {
    return pos_ + ahead < cps_.size() ? cps_[pos_ + ahead] : 0;
  }
  bool lookahead_is(std::string_view ascii) const {
    for (size_t i = 0; i < ascii.size(); ++i)
      if (peek(i) != static_cast<char32_t>(ascii[i])) return false;
    return true;
  }

  Status unimplemented_at(size_t at, std::string_view construct) const {
    return unimplemented("regex construct " + std::string(construct) + " at offset " +
                         std::to_string(at) + " of pattern '" + std::string(pattern_) +
                         "' is not supported by tessera's SplitRegex");
  }
  Status invalid_at(size_t at, std::string_view what) const {
    return invalid_argument(std::string(what) + " at offset " + std::to_string(at) +
                            " of pattern '" + std::string(pattern_) + "'");
  }

  std::unique_ptr<Node> make(Kind kind, size_t at) {
    auto node = std::make_unique<Node>();
    node->kind = kind;
    node->offset = at;
    return node;
  }

  std::unique_ptr<Node> make_set(std::vector<ClassAtom> atoms, bool negated, size_t at) {
    sets_.emplace_back(std::move(atoms), negated, case_insensitive_);
    auto node = make(Kind::kSet, at);
    node->set = static_cast<uint32_t>(sets_.size() - 1);
    return node;
  }

  // alternation := concat ('|' concat)*; stops at ')' when inside a group.
  Result<std::unique_ptr<Node>> parse_alternation(bool in_group, int depth) {
    if (depth > kMaxNesting) return invalid_at(offset(), "groups nested too deeply");
    const bool saved_case = case_insensitive_;
    auto alternation = make(Kind::kAlternate, offset());
    for (;;) {
      auto concat = parse_concat(in_group, depth);
      if (!concat.ok()) return concat.status();
      alternation->children.push_back(std::move(concat).value());
      if (peek() == '|' && !at_end()) {
        ++pos_;
        continue;
      }
      break;
    }
    if (in_group) {
      if (at_end()) return invalid_at(pattern_.size(), "missing ')' (unbalanced parentheses)");
      ++pos_;  // ')'
    }
    case_insensitive_ = saved_case;  // (?i) lasts to the end of its group
    if (alternation->children.size() == 1) return std::move(alternation->children[0]);
    return alternation;
  }

  Result<std::unique_ptr<Node>> parse_concat(bool in_group, int depth) {
    auto concat = make(Kind::kConcat, offset());
    while (!at_end() && peek() != '|' && !(peek() == ')' && in_group)) {
      if (peek() == ')') return invalid_at(offset(), "unbalanced ')'");
      auto atom = parse_quantified(depth);
      if (!atom.ok()) return atom.status();
      if (*atom) concat->children.push_back(std::move(atom).value());
    }
    return concat;
  }

  Result<std::unique_ptr<Node>> parse_quantified(int depth) {
    const size_t atom_offset = offset();
    auto atom = parse_atom(depth);
    if (!atom.ok()) return atom.status();
    std::unique_ptr<Node> node = std::move(atom).value();
    for (;;) {
      int min = 0, max = -1;
      const size_t quantifier_offset = offset();
      bool interval = false;
      if (peek() == '?' && !at_end()) {
        min = 0, max = 1;
        ++pos_;
      } else if (peek() == '*' && !at_end()) {
        ++pos_;
      } else if (peek() == '+' && !at_end()) {
        min = 1;
        ++pos_;
      } else if (peek() == '{' && parse_interval(min, max)) {
        interval = true;
        if (min > kMaxRepeat || max > kMaxRepeat)
          return invalid_at(quantifier_offset, "repeat count above 100000");
        if (max != -1 && max < min)
          return invalid_at(quantifier_offset, "repeat range {n,m} with m < n");
      } else {
        break;
      }
      if (!node) return invalid_at(quantifier_offset, "quantifier with nothing to repeat");
      if (node->kind == Kind::kAssert || node->kind == Kind::kLookahead)
        return unimplemented_at(quantifier_offset, "quantifier on an anchor or lookahead");
      Node::Greed greed = Node::Greed::kGreedy;
      if (peek() == '?' && !at_end()) {
        greed = Node::Greed::kLazy;
        ++pos_;
      } else if (peek() == '+' && !at_end()) {
        // Oniguruma's Ruby syntax reads {n,m}+ as a further repeat, not as possessive.
        if (interval) return unimplemented_at(quantifier_offset, "'+' after an interval {n,m}");
        greed = Node::Greed::kPossessive;
        ++pos_;
      }
      auto repeat = make(Kind::kRepeat, atom_offset);
      repeat->min = min;
      repeat->max = max;
      repeat->greed = greed;
      repeat->children.push_back(std::move(node));
      node = std::move(repeat);
    }
    return node;
  }

  // {n} {n,} {n,m} {,m}; anything else leaves '{' a literal (as Oniguruma does).
  bool parse_interval(int& min, int& max) {
    size_t p = pos_ + 1;
    auto read_number = [&](int& value) {
      size_t start = p;
      long long v = 0;
      while (p < cps_.size() && cps_[p] >= '0' && cps_[p] <= '9') {
        v = std::min<long long>(v * 10 + (cps_[p] - '0'), 1LL << 30);
        ++p;
      }
      value = static_cast<int>(v);
      return p > start;
    };
    int low = 0, high = -1;
    const bool has_low = read_number(low);
    if (p < cps_.size() && cps_[p] == ',') {
      ++p;
      if (!read_number(high)) high = -1;
      if (!has_low && high == -1) return false;
    } else {
      if (!has_low) return false;
      high = low;
    }
    if (p >= cps_.size() || cps_[p] != '}') return false;
    pos_ = p + 1;
    min = low;
    max = high;
    return true;
  }

  Result<std::unique_ptr<Node>> parse_atom(int depth) {
    const size_t at = offset();
    const char32_t c = peek();
    switch (c) {
      case '(':
        return parse_group(depth);
      case '[':
        return parse_class();
      case '.': {
        ++pos_;
        ClassAtom newline = range_atom('\n', '\n');
        return make_set({newline}, true, at);
      }
      case '^':
        ++pos_;
        return make_assert(Op::kLineStart, at);
      case '$':
        ++pos_;
        return make_assert(Op::kLineEnd, at);
      case '\\':
        return parse_escape();
      case '*':
      case '+':
      case '?':
        return invalid_at(at, "quantifier with nothing to repeat");
      default:
        ++pos_;
        return make_set({range_atom(c, c)}, false, at);
    }
  }

  std::unique_ptr<Node> make_assert(Op op, size_t at) {
    auto node = make(Kind::kAssert, at);
    node->assertion = op;
    return node;
  }

  Result<std::unique_ptr<Node>> parse_group(int depth) {
    const size_t at = offset();
    ++pos_;                     // '('
    Kind kind = Kind::kConcat;  // a plain group: its content
    bool negated = false;
    if (peek() == '?') {
      if (lookahead_is("?:")) {
        pos_ += 2;
      } else if (lookahead_is("?=")) {
        kind = Kind::kLookahead;
        pos_ += 2;
      } else if (lookahead_is("?!")) {
        kind = Kind::kLookahead;
        negated = true;
        pos_ += 2;
      } else if (lookahead_is("?>")) {
        kind = Kind::kAtomic;
        pos_ += 2;
      } else if (lookahead_is("?<=") || lookahead_is("?<!")) {
        return unimplemented_at(at, "lookbehind '(" + to_utf8(&cps_[pos_], 3) + "'");
      } else if (lookahead_is("?<") || lookahead_is("?P<") || lookahead_is("?'")) {
        return unimplemented_at(at, "named group");
      } else if (lookahead_is("?#")) {
        while (!at_end() && peek() != ')') ++pos_;
        if (at_end()) return invalid_at(at, "unterminated comment group");
        ++pos_;
        return std::unique_ptr<Node>();
      } else {
        return parse_flag_group(at, depth);
      }
    }
    auto inner = parse_alternation(true, depth + 1);
    if (!inner.ok()) return inner.status();
    if (kind == Kind::kConcat) return inner;
    auto node = make(kind, at);
    node->negated = negated;
    node->children.push_back(std::move(inner).value());
    return node;
  }

  // (?i) (?-i) (?i:...) (?-i:...): only the case-insensitive flag.
  Result<std::unique_ptr<Node>> parse_flag_group(size_t at, int depth) {
    ++pos_;  // '?'
    bool on = true;
    bool ignore_case = case_insensitive_;
    while (!at_end() && peek() != ':' && peek() != ')') {
      const char32_t flag = peek();
      if (flag == '-') {
        on = false;
      } else if (flag == 'i') {
        ignore_case = on;
      } else {
        return unimplemented_at(at, "group option '" + to_utf8(&cps_[pos_], 1) +
                                        "' (only (?i) and (?-i) are supported)");
      }
      ++pos_;
    }
    if (at_end()) return invalid_at(at, "missing ')' (unbalanced parentheses)");
    if (peek() == ')') {  // (?i): applies to the rest of the enclosing group
      ++pos_;
      case_insensitive_ = ignore_case;
      return std::unique_ptr<Node>();
    }
    ++pos_;  // ':'
    const bool saved = case_insensitive_;
    case_insensitive_ = ignore_case;
    auto inner = parse_alternation(true, depth + 1);
    case_insensitive_ = saved;
    return inner;
  }

  Result<std::unique_ptr<Node>> parse_escape() {
    const size_t at = offset();
    ++pos_;  // '\'
    if (at_end()) return invalid_at(at, "pattern ends with a lone '\\'");
    const char32_t c = peek();
    switch (c) {
      case 'A':
        ++pos_;
        return make_assert(Op::kTextStart, at);
      case 'z':
        ++pos_;
        return make_assert(Op::kTextEnd, at);
      case 'Z':
        ++pos_;
        return make_assert(Op::kTextEndNewline, at);
      case 'b':
        ++pos_;
        return make_assert(Op::kWordBoundary, at);
      case 'B':
        ++pos_;
        return make_assert(Op::kNotWordBoundary, at);
      case 'G':
        return unimplemented_at(at, "\\G");
      case 'k':
        return unimplemented_at(at, "named backreference \\k");
      default:
        break;
    }
    if (c >= '1' && c <= '9') return unimplemented_at(at, "backreference \\" + to_utf8(&c, 1));
    auto atom = parse_class_escape(at, /*in_class=*/false);
    if (!atom.ok()) return atom.status();
    return make_set({std::move(atom).value()}, false, at);
  }

  Result<char32_t> parse_hex(size_t at, size_t digits, bool braced) {
    char32_t value = 0;
    size_t count = 0;
    while (!at_end() && (braced ? peek() != '}' : count < digits)) {
      const char32_t h = peek();
      int v = -1;
      if (h >= '0' && h <= '9') v = static_cast<int>(h - '0');
      if (h >= 'a' && h <= 'f') v = static_cast<int>(h - 'a' + 10);
      if (h >= 'A' && h <= 'F') v = static_cast<int>(h - 'A' + 10);
      if (v < 0 || count >= 8) return invalid_at(at, "bad hexadecimal escape");
      value = value * 16 + static_cast<char32_t>(v);
      ++count;
      ++pos_;
    }
    if (braced) {
      if (at_end()) return invalid_at(at, "missing '}' in \\x{...}");
      ++pos_;
    }
    if (count == 0 || (!braced && count != digits)) return invalid_at(at, "bad hexadecimal escape");
    if (value > 0x10FFFF) return invalid_at(at, "code point above U+10FFFF");
    return value;
  }

  // An escape that stands for a set of code points (pos_ is just past the '\').
  Result<ClassAtom> parse_class_escape(size_t at, bool in_class) {
    const char32_t c = peek();
    ++pos_;
    ClassAtom atom;
    switch (c) {
      case 't':
        return range_atom('\t', '\t');
      case 'n':
        return range_atom('\n', '\n');
      case 'r':
        return range_atom('\r', '\r');
      case 'f':
        return range_atom('\f', '\f');
      case 'v':
        return range_atom('\v', '\v');
      case 'a':
        return range_atom(7, 7);
      case 'e':
        return range_atom(0x1B, 0x1B);
      case '0':
        return range_atom(0, 0);
      case 'b':  // only reached inside a class: backspace
        return range_atom(8, 8);
      case 'x': {
        const bool braced = peek() == '{';
        if (braced) ++pos_;
        auto value = parse_hex(at, 2, braced);
        if (!value.ok()) return value.status();
        return range_atom(*value, *value);
      }
      case 'u': {
        auto value = parse_hex(at, 4, false);
        if (!value.ok()) return value.status();
        return range_atom(*value, *value);
      }
      case 's':
      case 'S':
        atom.white_space = true;
        atom.negated = c == 'S';
        return atom;
      case 'd':
      case 'D':
        atom.categories = category_bit(GeneralCategory::Nd);
        atom.negated = c == 'D';
        return atom;
      case 'w':
      case 'W':
        atom.categories = word_categories();
        atom.negated = c == 'W';
        return atom;
      case 'p':
      case 'P':
        return parse_property(at, c == 'P');
      case 'h':
      case 'H':
        return unimplemented_at(at, "\\h (hexadecimal digit class)");
      case 'R':
      case 'X':
      case 'K':
      case 'N':
      case 'O':
      case 'y':
      case 'Y':
        return unimplemented_at(at, "\\" + to_utf8(&c, 1));
      default:
        break;
    }
    if (c < 0x80 && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))) {
      if (in_class && c >= '1' && c <= '7') return unimplemented_at(at, "octal escape");
      return unimplemented_at(at, "escape \\" + to_utf8(&c, 1));
    }
    return range_atom(c, c);  // an escaped punctuation or other character stands for itself
  }

  Result<ClassAtom> parse_property(size_t at, bool negated) {
    if (peek() != '{') return invalid_at(at, "\\p must be followed by {name}");
    ++pos_;
    if (peek() == '^') {
      negated = !negated;
      ++pos_;
    }
    const size_t name_start = pos_;
    while (!at_end() && peek() != '}') ++pos_;
    if (at_end()) return invalid_at(at, "missing '}' in \\p{...}");
    const std::string name = to_utf8(&cps_[name_start], pos_ - name_start);
    ++pos_;
    ClassAtom atom;
    if (!category_mask_of(name, atom.categories)) {
      return unimplemented_at(at, "property \\p{" + name +
                                      "} (only general categories such as L, Lu, N, Nd, P, S, "
                                      "M, Z, C are supported)");
    }
    atom.negated = negated;
    return atom;
  }

  // '[' '^'? item* ']' where item := single ('-' single)? | class escape.
  Result<std::unique_ptr<Node>> parse_class() {
    const size_t at = offset();
    ++pos_;  // '['
    bool negated = false;
    if (peek() == '^' && !at_end()) {
      negated = true;
      ++pos_;
    }
    std::vector<ClassAtom> atoms;
    ClassAtom ranges;
    bool first = true;
    for (;;) {
      if (at_end()) return invalid_at(at, "missing ']' of a character class");
      const size_t item_offset = offset();
      char32_t c = peek();
      if (c == ']' && !first) {
        ++pos_;
        break;
      }
      first = false;
      if (c == '[') return unimplemented_at(item_offset, "nested character class '[' in a class");
      if (c == '&' && peek(1) == '&')
        return unimplemented_at(item_offset, "class intersection '&&'");
      char32_t low = 0;
      if (c == '\\') {
        ++pos_;
        if (at_end()) return invalid_at(item_offset, "pattern ends with a lone '\\'");
        auto atom = parse_class_escape(item_offset, /*in_class=*/true);
        if (!atom.ok()) return atom.status();
        if (!atom->ranges.empty() && atom->ranges.size() == 1 &&
            atom->ranges[0].first == atom->ranges[0].second && !atom->negated) {
          low = atom->ranges[0].first;
        } else {
          atoms.push_back(std::move(atom).value());
          continue;
        }
      } else {
        low = c;
        ++pos_;
      }
      // A range low-high, unless '-' is last in the class.
      if (peek() == '-' && !at_end() && pos_ + 1 < cps_.size() && peek(1) != ']') {
        const size_t range_offset = offset();
        ++pos_;
        char32_t high = peek();
        if (high == '[') return unimplemented_at(offset(), "nested character class '[' in a class");
        if (high == '\\') {
          ++pos_;
          if (at_end()) return invalid_at(range_offset, "pattern ends with a lone '\\'");
          auto atom = parse_class_escape(range_offset, true);
          if (!atom.ok()) return atom.status();
          if (atom->ranges.size() != 1 || atom->negated)
            return invalid_at(range_offset, "a range must end at a single character");
          high = atom->ranges[0].first;
        } else {
          ++pos_;
        }
        if (high < low) return invalid_at(range_offset, "character class range out of order");
        ranges.ranges.push_back({low, high});
      } else {
        ranges.ranges.push_back({low, low});
      }
    }
    if (!ranges.ranges.empty()) atoms.push_back(std::move(ranges));
    return make_set(std::move(atoms), negated, at);
  }

  std::string_view pattern_;
  std::vector<char32_t> cps_;
  std::vector<uint32_t> offsets_;
  size_t pos_ = 0;
  bool case_insensitive_ = false;
  std::vector<CharSet> sets_;
};

}  // namespace

Result<Ast> parse_pattern(std::string_view pattern) {
  return Parser(pattern).parse();
}

bool is_nullable(const Node& node) {
  switch (node.kind) {
    case Kind::kEmpty:
    case Kind::kAssert:
    case Kind::kLookahead:
      return true;
    case Kind::kSet:
      return false;
    case Kind::kConcat:
      for (const auto& child : node.children)
        if (!is_nullable(*child)) return false;
      return true;
    case Kind::kAlternate:
      for (const auto& child : node.children)
        if (is_nullable(*child)) return true;
      return false;
    case Kind::kRepeat:
      return node.min == 0 || is_nullable(*node.children[0]);
    case Kind::kAtomic:
      return is_nullable(*node.children[0]);
  }
  return true;
}

}  // namespace tessera::unicode::regex
