#include "core/tokenizer/added_token_matcher.h"

#include <algorithm>

namespace tessera {
namespace {

uint64_t edge_key(int32_t node, unsigned char byte) {
  return (static_cast<uint64_t>(node) << 8) | byte;
}

// Positions per backward pass; each pass also reads the longest token's
// length past its end, so a pass is at least that long to stay linear.
constexpr std::size_t kWindow = 1 << 16;

}  // namespace

AddedTokenMatcher::AddedTokenMatcher() : nodes_(1) {
  root_next_.fill(-1);
}

int32_t AddedTokenMatcher::child(int32_t node, unsigned char byte) const {
  if (node == 0) return root_next_[byte];
  const auto it = edges_.find(edge_key(node, byte));
  return it == edges_.end() ? -1 : it->second;
}

void AddedTokenMatcher::add(std::string_view text, int32_t id, bool special) {
  if (text.empty()) return;
  int32_t node = 0;
  for (auto it = text.rbegin(); it != text.rend(); ++it) {  // the trie holds reversed texts
    const auto byte = static_cast<unsigned char>(*it);
    int32_t next = child(node, byte);
    if (next < 0) {
      next = static_cast<int32_t>(nodes_.size());
      Node created;
      created.parent = node;
      created.byte = byte;
      created.depth = nodes_[static_cast<std::size_t>(node)].depth + 1;
      nodes_.push_back(created);
      if (node == 0)
        root_next_[byte] = next;
      else
        edges_.emplace(edge_key(node, byte), next);
    }
    node = next;
  }
  Node& end = nodes_[static_cast<std::size_t>(node)];
  if (end.id >= 0) return;  // the first token of a repeated text wins
  end.id = id;
  end.special = special;
  longest_text_ = std::max(longest_text_, text.size());
}

int32_t AddedTokenMatcher::advance(int32_t state, unsigned char byte) const {
  while (true) {
    const int32_t next = child(state, byte);
    if (next >= 0) return next;
    if (state == 0) return 0;
    state = nodes_[static_cast<std::size_t>(state)].fail;
  }
}

void AddedTokenMatcher::build() {
  // Failure links in order of depth: a node's link and the links along it
  // are all shallower, so they are ready when it is reached.
  std::vector<int32_t> order(nodes_.size() - 1);
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int32_t>(i + 1);
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    return nodes_[static_cast<std::size_t>(a)].depth < nodes_[static_cast<std::size_t>(b)].depth;
  });
  for (const int32_t v : order) {
    Node& node = nodes_[static_cast<std::size_t>(v)];
    node.fail = node.parent == 0
                    ? 0
                    : advance(nodes_[static_cast<std::size_t>(node.parent)].fail, node.byte);
    const Node& fallback = nodes_[static_cast<std::size_t>(node.fail)];
    node.longest_any = node.id >= 0 ? v : fallback.longest_any;
    node.longest_plain = node.id >= 0 && !node.special ? v : fallback.longest_plain;
  }
}

void AddedTokenMatcher::longest_from(std::string_view text, std::size_t begin, std::size_t end,
                                     bool parse_special, std::vector<int32_t>& best) const {
  // Backwards from far enough past `end` that every token starting before it
  // is seen whole: the state at position p is then the longest suffix of a
  // reversed token that text[p..] starts with, and its failure chain holds
  // every token text[p..] starts with.
  const std::size_t from = std::min(text.size(), end + longest_text_);
  best.assign(end - begin, -1);
  int32_t state = 0;
  for (std::size_t p = from; p-- > begin;) {
    state = advance(state, static_cast<unsigned char>(text[p]));
    if (p >= end) continue;
    const Node& node = nodes_[static_cast<std::size_t>(state)];
    best[p - begin] = parse_special ? node.longest_any : node.longest_plain;
  }
}

std::vector<AddedTokenMatcher::Match> AddedTokenMatcher::find(std::string_view text,
                                                              bool parse_special) const {
  std::vector<Match> matches;
  if (empty()) return matches;
  const std::size_t window = std::max(kWindow, longest_text_);
  std::vector<int32_t> best;
  std::size_t begin = 0, end = 0;  // the window `best` covers
  for (std::size_t pos = 0; pos < text.size();) {
    if (pos >= end) {
      begin = pos;
      end = std::min(text.size(), pos + window);
      longest_from(text, begin, end, parse_special, best);
    }
    const int32_t found = best[pos - begin];
    if (found < 0) {
      ++pos;
      continue;
    }
    const Node& node = nodes_[static_cast<std::size_t>(found)];
    const auto length = static_cast<std::size_t>(node.depth);
    matches.push_back({pos, length, node.id});
    pos += length;
  }
  return matches;
}

}  // namespace tessera
