#include "core/tokenizer/text_split.h"

#include <algorithm>

#include "core/unicode/split_regex.h"
#include "core/unicode/utf8.h"

namespace tessera {
namespace {

struct Cut {
  std::size_t begin;  // bytes
  std::size_t end;
  bool match;
};

// The pieces a behaviour keeps, following tokenizers' SplitDelimiterBehavior.
void apply_behavior(std::string_view text, std::vector<Cut>& cuts, SplitBehavior behavior,
                    bool invert, std::vector<std::string>& out) {
  if (invert)
    for (Cut& c : cuts) c.match = !c.match;
  std::vector<Cut> kept;
  switch (behavior) {
    case SplitBehavior::kIsolated:
      kept = cuts;
      break;
    case SplitBehavior::kRemoved:
      for (const Cut& c : cuts)
        if (!c.match) kept.push_back(c);
      break;
    case SplitBehavior::kMergedWithPrevious: {
      bool previous_match = false;
      for (const Cut& c : cuts) {
        if (c.match && !previous_match && !kept.empty())
          kept.back().end = c.end;
        else
          kept.push_back(c);
        previous_match = c.match;
      }
      break;
    }
    case SplitBehavior::kMergedWithNext: {
      bool next_match = false;
      for (auto it = cuts.rbegin(); it != cuts.rend(); ++it) {
        if (it->match && !next_match && !kept.empty())
          kept.back().begin = it->begin;
        else
          kept.push_back(*it);
        next_match = it->match;
      }
      std::reverse(kept.begin(), kept.end());
      break;
    }
    case SplitBehavior::kContiguous:
      for (const Cut& c : cuts) {
        if (c.match && !kept.empty() && kept.back().match)
          kept.back().end = c.end;
        else
          kept.push_back(c);
      }
      break;
  }
  for (const Cut& c : kept)
    if (c.end > c.begin) out.emplace_back(text.substr(c.begin, c.end - c.begin));
}

}  // namespace

Result<std::unique_ptr<const unicode::SplitRegex>> compile_split_regex(const std::string& pattern) {
  ASSIGN_OR_RETURN(unicode::SplitRegex regex, unicode::SplitRegex::compile(pattern));
  return std::unique_ptr<const unicode::SplitRegex>(new unicode::SplitRegex(std::move(regex)));
}

void split_by_regex(const unicode::SplitRegex& regex, std::string_view text, SplitBehavior behavior,
                    bool invert, std::vector<std::string>& out) {
  thread_local std::vector<char32_t> cps;
  thread_local std::vector<uint32_t> offsets;
  thread_local std::vector<std::pair<uint32_t, uint32_t>> pieces;
  unicode::decode_utf8(text, cps, &offsets);
  pieces.clear();
  regex.split(cps, pieces);
  if (behavior == SplitBehavior::kIsolated) {  // the common case: every piece as it is
    for (const auto& [begin, end] : pieces)
      if (end > begin) out.emplace_back(text.substr(offsets[begin], offsets[end] - offsets[begin]));
    return;
  }
  // split() does not say which pieces are matches: a piece is one when a
  // match starts at its beginning (a gap holds no match start).
  std::vector<Cut> cuts;
  cuts.reserve(pieces.size());
  for (const auto& [begin, end] : pieces) {
    uint32_t match_end = 0;
    const bool match = regex.match_at(cps, begin, match_end) && match_end == end;
    cuts.push_back({offsets[begin], offsets[end], match});
  }
  apply_behavior(text, cuts, behavior, invert, out);
}

void split_by_string(std::string_view delimiter, std::string_view text, SplitBehavior behavior,
                     bool invert, std::vector<std::string>& out) {
  std::vector<Cut> cuts;
  std::size_t pos = 0;
  if (!delimiter.empty()) {
    for (std::size_t hit; (hit = text.find(delimiter, pos)) != std::string_view::npos;
         pos = hit + delimiter.size()) {
      if (hit > pos) cuts.push_back({pos, hit, false});
      cuts.push_back({hit, hit + delimiter.size(), true});
    }
  }
  if (pos < text.size()) cuts.push_back({pos, text.size(), false});
  apply_behavior(text, cuts, behavior, invert, out);
}

}  // namespace tessera
