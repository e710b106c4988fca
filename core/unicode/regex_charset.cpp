// CharSet: the class test, answered from a bitmap below U+10000.
#include <cstddef>
#include <unordered_map>

#include "core/unicode/regex_program.h"
#include "core/unicode/unicode_data.h"
#include "core/unicode/unicode_tables.h"

namespace tessera::unicode::regex {
namespace {

using Bitmap = std::vector<uint64_t>;  // one bit per code point below U+10000
constexpr size_t kBitmapWords = 0x10000 / 64;

void set_bit(Bitmap& bitmap, char32_t cp) {
  bitmap[cp >> 6] |= uint64_t{1} << (cp & 63);
}
bool test_bit(const Bitmap& bitmap, char32_t cp) {
  return (bitmap[cp >> 6] >> (cp & 63)) & 1;
}

// The code points below U+10000 of each general category, and of White_Space.
struct PropertyBitmaps {
  std::vector<Bitmap> categories;
  Bitmap white_space;
};

const PropertyBitmaps& property_bitmaps() {
  static const auto* bitmaps = [] {
    auto* b = new PropertyBitmaps;
    b->categories.assign(kGeneralCategoryCount, Bitmap(kBitmapWords, 0));
    b->white_space.assign(kBitmapWords, 0);
    for (char32_t cp = 0; cp < 0x10000; ++cp) {
      set_bit(b->categories[static_cast<int>(category_of(cp))], cp);
      if (is_white_space(cp)) set_bit(b->white_space, cp);
    }
    return b;
  }();
  return *bitmaps;
}

// Groups of code points with the same simple case folding (the folded form included),
// for every folding that is not the identity.
const std::vector<std::vector<char32_t>>& fold_groups() {
  static const auto* groups = [] {
    std::unordered_map<char32_t, std::vector<char32_t>> by_fold;
    for (char32_t cp = 'A'; cp <= 'Z'; ++cp) by_fold[cp + 32].push_back(cp);
    for (uint32_t i = 0; i < tables::kCaseFoldCount; ++i)
      by_fold[tables::kCaseFold[2 * i + 1]].push_back(tables::kCaseFold[2 * i]);
    auto* out = new std::vector<std::vector<char32_t>>();
    for (auto& [folded, members] : by_fold) {
      members.push_back(folded);
      out->push_back(std::move(members));
    }
    return out;
  }();
  return *groups;
}

const std::vector<char32_t>& fold_group_of(char32_t folded) {
  static const auto* index = [] {
    auto* map = new std::unordered_map<char32_t, size_t>();
    const auto& groups = fold_groups();
    for (size_t g = 0; g < groups.size(); ++g) (*map)[groups[g].back()] = g;
    return map;
  }();
  static const std::vector<char32_t> kNone;
  const auto it = index->find(folded);
  return it == index->end() ? kNone : fold_groups()[it->second];
}

Bitmap atom_bitmap(const ClassAtom& atom) {
  const PropertyBitmaps& properties = property_bitmaps();
  Bitmap bitmap(kBitmapWords, 0);
  for (int c = 0; c < kGeneralCategoryCount; ++c) {
    if (!((atom.categories >> c) & 1)) continue;
    for (size_t w = 0; w < kBitmapWords; ++w) bitmap[w] |= properties.categories[c][w];
  }
  if (atom.white_space)
    for (size_t w = 0; w < kBitmapWords; ++w) bitmap[w] |= properties.white_space[w];
  for (const auto& [first, last] : atom.ranges)
    for (char32_t cp = first; cp <= last && cp < 0x10000; ++cp) set_bit(bitmap, cp);
  if (atom.negated)
    for (uint64_t& word : bitmap) word = ~word;
  return bitmap;
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
  Bitmap raw(kBitmapWords, 0);
  for (const ClassAtom& atom : atoms_) {
    const Bitmap bits = atom_bitmap(atom);
    for (size_t w = 0; w < kBitmapWords; ++w) raw[w] |= bits[w];
  }
  bmp_ = raw;
  if (case_insensitive_) {
    // A member of a fold group matches when any member does.
    for (const auto& group : fold_groups()) {
      bool any = false;
      for (char32_t cp : group) any = any || (cp < 0x10000 ? test_bit(raw, cp) : matches_raw(cp));
      if (!any) continue;
      for (char32_t cp : group)
        if (cp < 0x10000) set_bit(bmp_, cp);
    }
  }
  if (negated_)
    for (uint64_t& word : bmp_) word = ~word;
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
      for (char32_t variant : fold_group_of(folded)) {
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
