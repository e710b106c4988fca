// Runs a compiled Program at one position: a backtracking machine with an explicit
// stack, leftmost-first (Perl/Oniguruma) priorities, and a step budget so a pathological
// pattern cannot hang the caller. Internal to core/unicode.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/unicode/regex_program.h"

namespace tessera::unicode::regex {

enum class MatchOutcome { kMatched, kNoMatch, kBudgetExhausted };

class Matcher {
 public:
  explicit Matcher(const Program& program) : program_(program) {}

  // Tries the whole program at `start` of `text`; on kMatched `end` is where the
  // match ends. `budget` counts executed instructions and is decreased.
  MatchOutcome match_at(std::span<const char32_t> text, uint32_t start, uint32_t& end,
                        uint64_t& budget);

 private:
  struct Frame {
    uint32_t pc;  // kRestoreFlag | register: undo a LoopEnter
    uint32_t pos;
  };
  static constexpr uint32_t kRestoreFlag = 0x80000000u;

  MatchOutcome run(uint32_t start_pc, uint32_t start_pos, uint32_t& end, uint64_t& budget);
  bool is_word_at(uint32_t pos) const;

  const Program& program_;
  std::span<const char32_t> text_;
  std::vector<Frame> stack_;
  std::vector<uint32_t> registers_;
};

}  // namespace tessera::unicode::regex
