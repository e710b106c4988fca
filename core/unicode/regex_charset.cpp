// CharSet: the class test, answered from a bitmap below U+10000.
#include <algorithm>
#include <mutex>
#include <unordered_map>

#include "core/unicode/regex_program.h"
#include "core/unicode/unicode_data.h"
#include "core/unicode/unicode_tables.h"

namespace tessera::unicode::regex {
namespace {

// Every code point whose simple case folding is `folded`, besides `folded` itself.
const std::vector<char32_t>& fold_class(char32_t folded) {
  static const auto* classes = [] {
    auto* map = new std::unordered_map<char32_t, std::vector<char32_t>>();
    for (char32_t cp = 'A'; cp <= 'Z'; ++cp) (*map)[cp + 32].push_back(cp);
    for (uint32_t i = 0; i < tables::kCaseFoldCount; ++i)
      (*map)[tables::kCaseFold[2 * i + 1]].push_back(tables::kCaseFold[2 * i]);
    return map;
  }();
  static const std::vector<char32_t> kNone;
  const auto it = classes->find(folded);
  return it == classes->end() ? kNone : it->second;
}

}  // namespace

bool ClassAtom::matches(char32_t cp) const {
  bool hit = false;
  if (categories && ((categories >> static_cast<int>(category_of(cp))) & 1)) hit = true;
  if (!hit && white_space && is_white_space(cp)) hit = true;
  if (!hit) {
    for (const auto& [first, last] : ranges) {
      if (cp >= first && cp <= last) {
        hit = true;
        break;
      }
    }
  }
  return hit != negated;
}

CharSet::CharSet(std::vector<ClassAtom> atoms, bool negated, bool case_insensitive)
    : atoms_(std::move(atoms)), negated_(negated), case_insensitive_(case_insensitive) {
  bmp_.assign(0x10000 / 64, 0);
  for (char32_t cp = 0; cp < 0x10000; ++cp) {
    if (matches_slow(cp)) bmp_[cp >> 6] |= uint64_t{1} << (cp & 63);
  }
}

bool CharSet::matches_raw(char32_t cp) const {
  for (const ClassAtom& atom : atoms_)
    if (atom.matches(cp)) return true;
  return false;
}

bool CharSet::matches_slow(char32_t cp) const {
  bool hit = matches_raw(cp);
  if (!hit && case_insensitive_) {
    const char32_t folded = simple_casefold(cp);
    hit = matches_raw(folded);
    if (!hit) {
      for (char32_t variant : fold_class(folded)) {
        if (variant != cp && matches_raw(variant)) {
          hit = true;
          break;
        }
      }
    }
  }
  return hit != negated_;
}

}  // namespace tessera::unicode::regex
