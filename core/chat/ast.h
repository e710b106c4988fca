// The parsed form of a chat template: statements holding expressions, each
// with the line:column it came from so render errors can point at it.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/chat/value.h"

namespace tessera::chat {

struct SourcePos {
  int line = 1;
  int column = 1;
};

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  enum class Kind {
    kLiteral,    // literal
    kName,       // name
    kList,       // [args...]
    kDict,       // {kwargs...} with keys as expressions in args (key, value, key, value ...)
    kAttribute,  // args[0].name
    kSubscript,  // args[0][args[1]]
    kSlice,      // args[0][args[1]:args[2]:args[3]] (null parts are omitted bounds)
    kCall,       // args[0](args[1..], kwargs)
    kFilter,     // args[0] | name(args[1..], kwargs)
    kTest,       // args[0] is [not: negated] name(args[1..])
    kUnary,      // op args[0]: "not", "-", "+"
    kBinary,     // args[0] op args[1]
    kTernary,    // args[0] if args[1] else args[2] (args[2] may be null)
  };
  Kind kind;
  SourcePos pos;
  Value literal;
  std::string name;  // variable, attribute, filter, test or operator
  bool negated = false;
  std::vector<ExprPtr> args;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
  // Levels of expressions from this one down to its deepest leaf (1 for a
  // leaf). The parser bounds it: evaluating, checking and destroying an
  // expression recurse that deep.
  int height = 1;
};

struct Stmt;
using Body = std::vector<std::unique_ptr<Stmt>>;

struct Stmt {
  enum class Kind {
    kText,    // text
    kOutput,  // {{ expr }}
    kIf,      // branches (condition, body); else_body
    kFor,     // for targets in expr [if condition]: body; else_body
    kSet,     // set targets = expr, or set target.attribute = expr, or {% set x %}body
    kBreak,
    kContinue,
    kMacro,        // macro text(targets with defaults) body
    kFilterBlock,  // filter expr (a kFilter whose subject is the rendered body) body
  };
  Kind kind;
  SourcePos pos;
  std::string text;
  ExprPtr expr;
  ExprPtr condition;  // for-loop filter
  std::vector<std::string> targets;
  std::vector<ExprPtr> defaults;  // macro parameters' defaults (null: none)
  std::string attribute;          // set ns.attribute
  std::vector<std::pair<ExprPtr, Body>> branches;
  Body body;
  Body else_body;
};

struct Program {
  std::string origin;
  Body body;
};

}  // namespace tessera::chat
