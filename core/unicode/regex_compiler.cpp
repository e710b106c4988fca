#include "core/unicode/regex_compiler.h"

#include <string>

namespace tessera::unicode::regex {
namespace {

using Kind = Node::Kind;

class Compiler {
 public:
  explicit Compiler(Program& program) : program_(program) {}

  bool emit_node(const Node& node) {
    if (program_.code.size() > kMaxInstructions) return false;
    switch (node.kind) {
      case Kind::kEmpty:
        return true;
      case Kind::kSet:
        emit(Op::kSet, node.set);
        return true;
      case Kind::kAssert:
        emit(node.assertion);
        return true;
      case Kind::kConcat:
        for (const auto& child : node.children)
          if (!emit_node(*child)) return false;
        return true;
      case Kind::kAlternate:
        return emit_alternation(node);
      case Kind::kRepeat:
        return emit_repeat(node);
      case Kind::kLookahead:
        return emit_sub_program(node.negated ? Op::kNegLookahead : Op::kLookahead,
                                *node.children[0]);
      case Kind::kAtomic:
        return emit_sub_program(Op::kAtomic, *node.children[0]);
    }
    return false;
  }

  uint32_t emit(Op op, uint32_t a = 0, uint32_t b = 0) {
    program_.code.push_back({op, a, b});
    return static_cast<uint32_t>(program_.code.size() - 1);
  }
  uint32_t here() const { return static_cast<uint32_t>(program_.code.size()); }

 private:
  // split L1, next; L1: alt0; jump end; next: split L2, next2 ... last alternative.
  bool emit_alternation(const Node& node) {
    std::vector<uint32_t> jumps_to_end;
    for (size_t i = 0; i < node.children.size(); ++i) {
      const bool last = i + 1 == node.children.size();
      uint32_t split = 0;
      if (!last) split = emit(Op::kSplit);
      if (!last) program_.code[split].a = here();
      if (!emit_node(*node.children[i])) return false;
      if (!last) {
        jumps_to_end.push_back(emit(Op::kJump));
        program_.code[split].b = here();
      }
    }
    for (uint32_t jump : jumps_to_end) program_.code[jump].a = here();
    return true;
  }

  // Sub-program right after the instruction: [op, b=after] [body] [match] after:
  bool emit_sub_program(Op op, const Node& body) {
    const uint32_t head = emit(op);
    if (!emit_node(body)) return false;
    emit(Op::kMatch);
    program_.code[head].b = here();
    return true;
  }

  bool emit_repeat(const Node& node) {
    if (node.greed == Node::Greed::kPossessive) {
      // x*+ is the atomic group (?>x*).
      const uint32_t head = emit(Op::kAtomic);
      if (!emit_counted(node, *node.children[0], Node::Greed::kGreedy)) return false;
      emit(Op::kMatch);
      program_.code[head].b = here();
      return true;
    }
    return emit_counted(node, *node.children[0], node.greed);
  }

  bool emit_counted(const Node& node, const Node& body, Node::Greed greed) {
    const bool lazy = greed == Node::Greed::kLazy;
    for (int i = 0; i < node.min; ++i)
      if (!emit_node(body)) return false;
    if (node.max == -1) return emit_star(body, lazy);
    // Optional copies: split(body, end) body split(body, end) body ... end:
    std::vector<uint32_t> splits;
    for (int i = node.min; i < node.max; ++i) {
      splits.push_back(emit(Op::kSplit));
      const uint32_t body_start = here();
      if (lazy) {
        program_.code[splits.back()].b = body_start;
      } else {
        program_.code[splits.back()].a = body_start;
      }
      if (!emit_node(body)) return false;
    }
    for (uint32_t split : splits) {
      if (lazy) {
        program_.code[split].a = here();
      } else {
        program_.code[split].b = here();
      }
    }
    return true;
  }

  // loop: split(body, end); body: [enter r] body [check r] jump loop; end:
  bool emit_star(const Node& body, bool lazy) {
    const bool guard = is_nullable(body);
    const uint32_t loop = emit(Op::kSplit);
    const uint32_t body_start = here();
    const uint32_t reg = program_.registers;
    if (guard) {
      ++program_.registers;
      emit(Op::kLoopEnter, reg);
    }
    if (!emit_node(body)) return false;
    if (guard) emit(Op::kLoopCheck, reg);
    emit(Op::kJump, loop);
    if (lazy) {
      program_.code[loop].a = here();
      program_.code[loop].b = body_start;
    } else {
      program_.code[loop].a = body_start;
      program_.code[loop].b = here();
    }
    return true;
  }

  Program& program_;
};

}  // namespace

Result<Program> compile_program(Ast ast, std::string_view pattern) {
  Program program;
  program.sets = std::move(ast.sets);
  Compiler compiler(program);
  if (!compiler.emit_node(*ast.root) || program.code.size() > kMaxInstructions) {
    return invalid_argument("pattern '" + std::string(pattern) + "' unrolls to more than " +
                            std::to_string(kMaxInstructions) +
                            " instructions (large counted repeats {n,m}); reduce the counts");
  }
  compiler.emit(Op::kMatch);
  return program;
}

}  // namespace tessera::unicode::regex
