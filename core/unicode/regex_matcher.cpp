#include "core/unicode/regex_matcher.h"

#include "core/unicode/unicode_data.h"

namespace tessera::unicode::regex {

MatchOutcome Matcher::match_at(std::span<const char32_t> text, uint32_t start, uint32_t& end,
                               uint64_t& budget) {
  text_ = text;
  stack_.clear();
  registers_.assign(program_.registers, UINT32_MAX);
  return run(0, start, end, budget);
}

bool Matcher::is_word_at(uint32_t pos) const {
  if (pos >= text_.size()) return false;
  const uint16_t flags = flags_of(text_[pos]);
  return (flags & (kLetter | kMark | kNumber)) || category_of(text_[pos]) == GeneralCategory::Pc;
}

// Runs from (start_pc, start_pos) until a kMatch (success) or until every alternative
// pushed since this call is exhausted. Lookaheads and atomic groups call run() again
// for their sub-program; it leaves the stack as it found it.
MatchOutcome Matcher::run(uint32_t start_pc, uint32_t start_pos, uint32_t& end, uint64_t& budget) {
  const size_t base = stack_.size();
  const auto* code = program_.code.data();
  const auto* sets = program_.sets.data();
  const uint32_t size = static_cast<uint32_t>(text_.size());
  stack_.push_back({start_pc, start_pos});
  while (stack_.size() > base) {
    Frame frame = stack_.back();
    stack_.pop_back();
    if (frame.pc & kRestoreFlag) {
      registers_[frame.pc & ~kRestoreFlag] = frame.pos;
      continue;
    }
    uint32_t pc = frame.pc;
    uint32_t pos = frame.pos;
    for (;;) {
      if (budget == 0) {
        stack_.resize(base);
        return MatchOutcome::kBudgetExhausted;
      }
      --budget;
      const Instruction& inst = code[pc];
      bool ok = true;
      switch (inst.op) {
        case Op::kSet:
          ok = pos < size && sets[inst.a].matches(text_[pos]);
          ++pos, ++pc;
          break;
        case Op::kSplit:
          stack_.push_back({inst.b, pos});
          pc = inst.a;
          break;
        case Op::kJump:
          pc = inst.a;
          break;
        case Op::kMatch:
          end = pos;
          stack_.resize(base);
          return MatchOutcome::kMatched;
        case Op::kLookahead:
        case Op::kNegLookahead: {
          uint32_t sub_end = 0;
          const MatchOutcome sub = run(pc + 1, pos, sub_end, budget);
          if (sub == MatchOutcome::kBudgetExhausted) {
            stack_.resize(base);
            return sub;
          }
          ok = (sub == MatchOutcome::kMatched) == (inst.op == Op::kLookahead);
          pc = inst.b;
          break;
        }
        case Op::kAtomic: {
          uint32_t sub_end = 0;
          const MatchOutcome sub = run(pc + 1, pos, sub_end, budget);
          if (sub == MatchOutcome::kBudgetExhausted) {
            stack_.resize(base);
            return sub;
          }
          ok = sub == MatchOutcome::kMatched;
          pos = sub_end;
          pc = inst.b;
          break;
        }
        case Op::kLoopEnter:
          stack_.push_back({kRestoreFlag | inst.a, registers_[inst.a]});
          registers_[inst.a] = pos;
          ++pc;
          break;
        case Op::kLoopCheck:
          ok = registers_[inst.a] != pos;
          ++pc;
          break;
        case Op::kLineStart:
          ok = pos == 0 || text_[pos - 1] == '\n';
          ++pc;
          break;
        case Op::kLineEnd:
          ok = pos == size || text_[pos] == '\n';
          ++pc;
          break;
        case Op::kTextStart:
          ok = pos == 0;
          ++pc;
          break;
        case Op::kTextEnd:
          ok = pos == size;
          ++pc;
          break;
        case Op::kTextEndNewline:
          ok = pos == size || (pos + 1 == size && text_[pos] == '\n');
          ++pc;
          break;
        case Op::kWordBoundary:
        case Op::kNotWordBoundary: {
          const bool boundary = (pos > 0 && is_word_at(pos - 1)) != is_word_at(pos);
          ok = boundary == (inst.op == Op::kWordBoundary);
          ++pc;
          break;
        }
      }
      if (!ok) break;
    }
  }
  return MatchOutcome::kNoMatch;
}

}  // namespace tessera::unicode::regex
