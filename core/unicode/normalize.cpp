#include "core/unicode/normalize.h"

#include <algorithm>
#include <span>

#include "core/unicode/unicode_data.h"
#include "core/unicode/unicode_tables.h"
#include "core/unicode/utf8.h"

namespace tessera::unicode {
namespace {

// Hangul syllables decompose and compose arithmetically (Unicode 15.0, section 3.12).
constexpr char32_t kHangulSBase = 0xAC00, kHangulLBase = 0x1100, kHangulVBase = 0x1161,
                   kHangulTBase = 0x11A7;
constexpr char32_t kHangulLCount = 19, kHangulVCount = 21, kHangulTCount = 28;
constexpr char32_t kHangulNCount = kHangulVCount * kHangulTCount;
constexpr char32_t kHangulSCount = kHangulLCount * kHangulNCount;

std::span<const uint32_t> canonical_decomposition(char32_t cp) {
  uint32_t lo = 0, hi = tables::kDecompositionCount;
  while (lo < hi) {
    const uint32_t mid = (lo + hi) / 2;
    if (tables::kDecompositionIndex[3 * mid] < cp) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  if (lo == tables::kDecompositionCount || tables::kDecompositionIndex[3 * lo] != cp) return {};
  return {tables::kDecompositionPool + tables::kDecompositionIndex[3 * lo + 1],
          tables::kDecompositionIndex[3 * lo + 2]};
}

void append_decomposition(char32_t cp, std::vector<char32_t>& out) {
  if (cp >= kHangulSBase && cp < kHangulSBase + kHangulSCount) {
    const char32_t index = cp - kHangulSBase;
    out.push_back(kHangulLBase + index / kHangulNCount);
    out.push_back(kHangulVBase + (index % kHangulNCount) / kHangulTCount);
    if (index % kHangulTCount != 0) out.push_back(kHangulTBase + index % kHangulTCount);
    return;
  }
  // Nothing below U+00C0 decomposes.
  const auto decomposition = cp < 0xC0 ? std::span<const uint32_t>{} : canonical_decomposition(cp);
  if (decomposition.empty()) {
    out.push_back(cp);
  } else {
    out.insert(out.end(), decomposition.begin(), decomposition.end());
  }
}

// Stable sort of every run of non-starters by combining class.
void canonical_order(std::vector<char32_t>& cps) {
  size_t i = 0;
  while (i < cps.size()) {
    if (combining_class(cps[i]) == 0) {
      ++i;
      continue;
    }
    size_t end = i;
    while (end < cps.size() && combining_class(cps[end]) != 0) ++end;
    if (end - i > 1) {
      std::stable_sort(cps.begin() + i, cps.begin() + end, [](char32_t a, char32_t b) {
        return combining_class(a) < combining_class(b);
      });
    }
    i = end;
  }
}

// The primary composite of a pair, or 0.
char32_t compose_pair(char32_t first, char32_t second) {
  if (first >= kHangulLBase && first < kHangulLBase + kHangulLCount && second >= kHangulVBase &&
      second < kHangulVBase + kHangulVCount) {
    return kHangulSBase +
           ((first - kHangulLBase) * kHangulVCount + (second - kHangulVBase)) * kHangulTCount;
  }
  if (first >= kHangulSBase && first < kHangulSBase + kHangulSCount &&
      (first - kHangulSBase) % kHangulTCount == 0 && second > kHangulTBase &&
      second < kHangulTBase + kHangulTCount) {
    return first + (second - kHangulTBase);
  }
  const uint64_t key = (static_cast<uint64_t>(first) << 21) | second;
  const uint64_t* end = tables::kCompositionKeys + tables::kCompositionCount;
  const uint64_t* found = std::lower_bound(tables::kCompositionKeys, end, key);
  if (found == end || *found != key) return 0;
  return tables::kCompositionValues[found - tables::kCompositionKeys];
}

// Canonical composition algorithm (UAX #15 section 1.3) in place.
void compose(std::vector<char32_t>& cps) {
  if (cps.empty()) return;
  size_t starter = 0;  // index (in the output) of the last starter, or npos
  bool have_starter = combining_class(cps[0]) == 0;
  int last_class = have_starter ? 0 : 256;
  size_t write = 1;
  for (size_t read = 1; read < cps.size(); ++read) {
    const char32_t cp = cps[read];
    const int cls = combining_class(cp);
    // Blocked when a character between the starter and this one has class 0 or >= cls.
    const bool blocked = write != starter + 1 && (last_class == 0 || last_class >= cls);
    if (have_starter && !blocked) {
      const char32_t composite = compose_pair(cps[starter], cp);
      if (composite != 0) {
        cps[starter] = composite;
        continue;
      }
    }
    if (cls == 0) {
      starter = write;
      have_starter = true;
    }
    last_class = cls;
    cps[write++] = cp;
  }
  cps.resize(write);
}

bool is_quick_nfc(const std::vector<char32_t>& cps) {
  for (char32_t cp : cps) {
    const uint16_t properties = tables::properties(cp);
    if ((properties & tables::kNfcNotYesBit) || (properties >> tables::kCombiningClassShift) != 0)
      return false;
  }
  return true;
}

std::string encode(const std::vector<char32_t>& cps) {
  return to_utf8(cps.data(), cps.size());
}

}  // namespace

void nfd(const std::vector<char32_t>& cps, std::vector<char32_t>& out) {
  out.clear();
  out.reserve(cps.size());
  for (char32_t cp : cps) append_decomposition(cp, out);
  canonical_order(out);
}

void nfc(const std::vector<char32_t>& cps, std::vector<char32_t>& out) {
  if (is_quick_nfc(cps)) {
    out = cps;
    return;
  }
  nfd(cps, out);
  compose(out);
}

std::string nfd(std::string_view utf8) {
  std::vector<char32_t> cps, out;
  decode_utf8(utf8, cps, nullptr, Utf8Errors::kWhatwg);
  nfd(cps, out);
  return encode(out);
}

std::string nfc(std::string_view utf8) {
  std::vector<char32_t> cps, out;
  decode_utf8(utf8, cps, nullptr, Utf8Errors::kWhatwg);
  if (is_quick_nfc(cps)) return encode(cps);
  nfc(cps, out);
  return encode(out);
}

}  // namespace tessera::unicode
