// Finds a vocabulary's added tokens in a text: scanning left to right, the
// leftmost position where an allowed token starts, the longest token allowed
// there, then on from its end (llama.cpp's tokenizer_st_partition and Hugging
// Face's added-token split both match this way).
//
// Time is linear in the text and in the tokens' total length, whatever the
// tokens are: the longest token starting at each position comes from one
// Aho-Corasick automaton over the reversed texts, run backwards over the text
// in windows. (Walking a trie from every position costs text length x token
// length: a 100,000-byte token made a megabyte take minutes.)
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace tessera {

class AddedTokenMatcher {
 public:
  AddedTokenMatcher();

  // Adds a token's text under `id` (the caller's); a special one matches only
  // with parse_special. Empty texts are ignored, and of two tokens with the
  // same text the first added wins. Call build() after the last.
  void add(std::string_view text, int32_t id, bool special);
  void build();

  struct Match {
    std::size_t begin = 0;
    std::size_t length = 0;
    int32_t id = -1;
  };
  std::vector<Match> find(std::string_view text, bool parse_special) const;

  bool empty() const { return nodes_.size() == 1; }

 private:
  struct Node {
    int32_t parent = -1;
    unsigned char byte = 0;
    int32_t depth = 0;
    int32_t fail = 0;
    int32_t id = -1;  // the token whose (reversed) text ends here
    bool special = false;
    // The deepest node on the failure chain from here (this one included)
    // ending a token: any token, or only non-special ones. -1: none.
    int32_t longest_any = -1;
    int32_t longest_plain = -1;
  };

  int32_t child(int32_t node, unsigned char byte) const;
  int32_t advance(int32_t state, unsigned char byte) const;
  // best[i] for each i in [begin, end): the node of the longest allowed token
  // starting at text[begin + i], or -1.
  void longest_from(std::string_view text, std::size_t begin, std::size_t end, bool parse_special,
                    std::vector<int32_t>& best) const;

  std::vector<Node> nodes_;
  std::unordered_map<uint64_t, int32_t> edges_;  // (node << 8 | byte) -> child
  std::array<int32_t, 256> root_next_{};         // the root's edges, the hot path
  std::size_t longest_text_ = 0;
};

}  // namespace tessera
