#include "core/chat/parser.h"

#include <algorithm>
#include <charconv>
#include <set>
#include <vector>

#include "core/chat/lexer.h"

namespace tessera::chat {
namespace {

// Deeper nesting than this is no chat template; refusing it keeps the
// recursive parser, renderer and destructor off the end of the stack. One
// budget for everything that nests: blocks, brackets and the recursive
// productions count while they are parsed, and each expression node counts
// its height, so a chain (1+1+..., x.a.a..., x|f|f...) spends one level per
// link although it is parsed by a loop.
constexpr int kMaxNesting = 96;

class Parser {
 public:
  Parser(std::vector<Token> tokens, const std::string& origin)
      : tokens_(std::move(tokens)), origin_(origin) {}

  Result<Body> parse_all() {
    ASSIGN_OR_RETURN(Body body, parse_body({}));
    if (peek().kind != Token::Kind::kEnd) return error(peek().pos, "unexpected end tag");
    return body;
  }

 private:
  using Kind = Token::Kind;

  const Token& peek(std::size_t ahead = 0) const {
    return tokens_[std::min(pos_ + ahead, tokens_.size() - 1)];
  }
  const Token& next() {
    const Token& t = peek();
    if (pos_ < tokens_.size() - 1) ++pos_;
    return t;
  }
  bool is_op(std::string_view op, std::size_t ahead = 0) const {
    return peek(ahead).kind == Kind::kOperator && peek(ahead).text == op;
  }
  bool is_name(std::string_view name, std::size_t ahead = 0) const {
    return peek(ahead).kind == Kind::kName && peek(ahead).text == name;
  }
  Status error(SourcePos at, const std::string& message) const {
    return invalid_argument(where(origin_, at) + message);
  }
  Status too_deep(SourcePos at, const std::string& what) const {
    return error(at, what + " nested too deeply (more than " + std::to_string(kMaxNesting) +
                         " levels of blocks, brackets, operators, filters and calls)");
  }
  Status unsupported(SourcePos at, const std::string& what) const {
    return unimplemented(where(origin_, at) + what +
                         " is not supported by tessera's chat-template renderer "
                         "(docs/chat-templates.md lists what is)");
  }
  std::string describe(const Token& t) const {
    switch (t.kind) {
      case Kind::kEnd:
        return "the end of the template";
      case Kind::kText:
        return "text";
      case Kind::kOutputEnd:
        return "'}}'";
      case Kind::kBlockEnd:
        return "'%}'";
      case Kind::kString:
        return "a string";
      default:
        return "'" + t.text + "'";
    }
  }
  Status expect_op(std::string_view op) {
    if (!is_op(op))
      return error(peek().pos, "expected '" + std::string(op) + "', found " + describe(peek()));
    next();
    return ok_status();
  }
  Status expect_block_end() {
    if (peek().kind != Kind::kBlockEnd)
      return error(peek().pos, "expected '%}', found " + describe(peek()));
    next();
    return ok_status();
  }
  Result<std::string> expect_name() {
    if (peek().kind != Kind::kName)
      return error(peek().pos, "expected a name, found " + describe(peek()));
    return next().text;
  }

  // ---- statements ----

  // Parses statements until a {% tag %} whose keyword is in `enders` (left
  // unconsumed, positioned at the keyword) or the end of input.
  Result<Body> parse_body(const std::set<std::string_view>& enders) {
    if (++depth_ > kMaxNesting) return too_deep(peek().pos, "blocks");
    Body body;
    while (true) {
      const Token& t = peek();
      if (t.kind == Kind::kEnd) {
        if (!enders.empty())
          return error(t.pos, "missing {% " + std::string(*enders.rbegin()) + " %}");
        break;
      }
      if (t.kind == Kind::kText) {
        auto stmt = std::make_unique<Stmt>();
        stmt->kind = Stmt::Kind::kText;
        stmt->pos = t.pos;
        stmt->text = next().text;
        body.push_back(std::move(stmt));
        continue;
      }
      if (t.kind == Kind::kOutputBegin) {
        next();
        auto stmt = std::make_unique<Stmt>();
        stmt->kind = Stmt::Kind::kOutput;
        stmt->pos = t.pos;
        ASSIGN_OR_RETURN(stmt->expr, parse_expression());
        if (peek().kind != Kind::kOutputEnd)
          return error(peek().pos, "expected '}}', found " + describe(peek()));
        next();
        body.push_back(std::move(stmt));
        continue;
      }
      // A block tag.
      const Token& keyword = peek(1);
      if (keyword.kind != Kind::kName) return error(keyword.pos, "expected a statement keyword");
      if (enders.count(keyword.text)) {
        next();  // the {%; the caller reads the keyword
        break;
      }
      next();
      RETURN_IF_ERROR(parse_statement(body));
    }
    --depth_;
    return body;
  }

  // At the keyword after {%. Appends the statement to `body`.
  Status parse_statement(Body& body) {
    const Token keyword = next();
    const std::string& k = keyword.text;
    if (k == "if") return append(body, parse_if(keyword.pos));
    if (k == "for") return append(body, parse_for(keyword.pos));
    if (k == "set") return append(body, parse_set(keyword.pos));
    if (k == "macro") return append(body, parse_macro(keyword.pos));
    if (k == "filter") return append(body, parse_filter_block(keyword.pos));
    if (k == "break" || k == "continue") {
      if (loop_depth_ == 0) return error(keyword.pos, "'" + k + "' outside a for loop");
      RETURN_IF_ERROR(expect_block_end());
      auto stmt = std::make_unique<Stmt>();
      stmt->kind = k == "break" ? Stmt::Kind::kBreak : Stmt::Kind::kContinue;
      stmt->pos = keyword.pos;
      body.push_back(std::move(stmt));
      return ok_status();
    }
    if (k == "generation") {
      // transformers' assistant-mask marker: renders its body unchanged.
      RETURN_IF_ERROR(expect_block_end());
      ASSIGN_OR_RETURN(Body inner, parse_body({"endgeneration"}));
      next();
      RETURN_IF_ERROR(expect_block_end());
      for (auto& s : inner) body.push_back(std::move(s));
      return ok_status();
    }
    static const std::set<std::string_view> kKnown = {"call",    "include",    "import", "from",
                                                      "extends", "block",      "raw",    "with",
                                                      "do",      "autoescape", "trans",  "endcall"};
    if (kKnown.count(k)) return unsupported(keyword.pos, "'{% " + k + " %}'");
    return error(keyword.pos, "unknown statement '" + k + "' (or a stray end tag)");
  }

  Status append(Body& body, Result<std::unique_ptr<Stmt>> stmt) {
    if (!stmt.ok()) return stmt.status();
    body.push_back(std::move(stmt).value());
    return ok_status();
  }

  Result<std::unique_ptr<Stmt>> parse_if(SourcePos at) {
    auto stmt = std::make_unique<Stmt>();
    stmt->kind = Stmt::Kind::kIf;
    stmt->pos = at;
    while (true) {
      ASSIGN_OR_RETURN(ExprPtr condition, parse_expression());
      RETURN_IF_ERROR(expect_block_end());
      ASSIGN_OR_RETURN(Body branch, parse_body({"elif", "else", "endif"}));
      stmt->branches.emplace_back(std::move(condition), std::move(branch));
      const std::string ender = next().text;
      if (ender == "elif") continue;
      RETURN_IF_ERROR(expect_block_end());
      if (ender == "else") {
        ASSIGN_OR_RETURN(stmt->else_body, parse_body({"endif"}));
        next();
        RETURN_IF_ERROR(expect_block_end());
      }
      return stmt;
    }
  }

  Result<std::vector<std::string>> parse_targets() {
    std::vector<std::string> names;
    const bool parenthesized = is_op("(");
    if (parenthesized) next();
    do {
      ASSIGN_OR_RETURN(std::string name, expect_name());
      names.push_back(std::move(name));
    } while (is_op(",") && (next(), true));
    if (parenthesized) RETURN_IF_ERROR(expect_op(")"));
    return names;
  }

  Result<std::unique_ptr<Stmt>> parse_for(SourcePos at) {
    auto stmt = std::make_unique<Stmt>();
    stmt->kind = Stmt::Kind::kFor;
    stmt->pos = at;
    ASSIGN_OR_RETURN(stmt->targets, parse_targets());
    if (!is_name("in")) return error(peek().pos, "expected 'in' in the for statement");
    next();
    ASSIGN_OR_RETURN(stmt->expr, parse_or_expression());  // no ternary: 'if' filters
    if (is_name("if")) {
      next();
      ASSIGN_OR_RETURN(stmt->condition, parse_expression());
    }
    if (is_name("recursive")) return unsupported(peek().pos, "a recursive for loop");
    RETURN_IF_ERROR(expect_block_end());
    ++loop_depth_;
    ASSIGN_OR_RETURN(stmt->body, parse_body({"else", "endfor"}));
    --loop_depth_;
    if (next().text == "else") {
      RETURN_IF_ERROR(expect_block_end());
      ASSIGN_OR_RETURN(stmt->else_body, parse_body({"endfor"}));
      next();
    }
    RETURN_IF_ERROR(expect_block_end());
    return stmt;
  }

  Result<std::unique_ptr<Stmt>> parse_filter_block(SourcePos at) {
    auto stmt = std::make_unique<Stmt>();
    stmt->kind = Stmt::Kind::kFilterBlock;
    stmt->pos = at;
    ExprPtr placeholder = make(Expr::Kind::kLiteral, at);
    ExprPtr e = make(Expr::Kind::kFilter, peek().pos);
    ASSIGN_OR_RETURN(e->name, expect_name());
    e->args.push_back(std::move(placeholder));
    if (is_op("(")) RETURN_IF_ERROR(parse_arguments(*e));
    if (is_op("|")) return unsupported(peek().pos, "a chain of filters in '{% filter %}'");
    ASSIGN_OR_RETURN(stmt->expr, finish(std::move(e)));
    RETURN_IF_ERROR(expect_block_end());
    ASSIGN_OR_RETURN(stmt->body, parse_body({"endfilter"}));
    next();
    RETURN_IF_ERROR(expect_block_end());
    return stmt;
  }

  Result<std::unique_ptr<Stmt>> parse_macro(SourcePos at) {
    auto stmt = std::make_unique<Stmt>();
    stmt->kind = Stmt::Kind::kMacro;
    stmt->pos = at;
    ASSIGN_OR_RETURN(stmt->text, expect_name());
    RETURN_IF_ERROR(expect_op("("));
    while (!is_op(")")) {
      ASSIGN_OR_RETURN(std::string param, expect_name());
      ExprPtr fallback;
      if (is_op("=")) {
        next();
        ASSIGN_OR_RETURN(fallback, parse_expression());
      }
      stmt->targets.push_back(std::move(param));
      stmt->defaults.push_back(std::move(fallback));
      if (!is_op(",")) break;
      next();
    }
    RETURN_IF_ERROR(expect_op(")"));
    RETURN_IF_ERROR(expect_block_end());
    const int outer_loops = loop_depth_;
    loop_depth_ = 0;
    ASSIGN_OR_RETURN(stmt->body, parse_body({"endmacro"}));
    loop_depth_ = outer_loops;
    next();
    if (peek().kind == Kind::kName && peek().text == stmt->text) next();
    RETURN_IF_ERROR(expect_block_end());
    return stmt;
  }

  Result<std::unique_ptr<Stmt>> parse_set(SourcePos at) {
    auto stmt = std::make_unique<Stmt>();
    stmt->kind = Stmt::Kind::kSet;
    stmt->pos = at;
    if (peek().kind == Kind::kName && is_op(".", 1)) {
      stmt->targets.push_back(next().text);
      next();
      ASSIGN_OR_RETURN(stmt->attribute, expect_name());
    } else {
      ASSIGN_OR_RETURN(stmt->targets, parse_targets());
    }
    if (peek().kind == Kind::kBlockEnd) {  // {% set x %}...{% endset %}
      if (stmt->targets.size() != 1 || !stmt->attribute.empty())
        return error(at, "a block set assigns one plain name");
      next();
      ASSIGN_OR_RETURN(stmt->body, parse_body({"endset"}));
      next();
      RETURN_IF_ERROR(expect_block_end());
      return stmt;
    }
    RETURN_IF_ERROR(expect_op("="));
    ASSIGN_OR_RETURN(stmt->expr, parse_expression());
    RETURN_IF_ERROR(expect_block_end());
    return stmt;
  }

  // ---- expressions ----

  ExprPtr make(Expr::Kind kind, SourcePos at) {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->pos = at;
    return e;
  }
  Result<ExprPtr> make_binary(std::string op, ExprPtr left, ExprPtr right, SourcePos at) {
    ExprPtr e = make(Expr::Kind::kBinary, at);
    e->name = std::move(op);
    e->args.push_back(std::move(left));
    e->args.push_back(std::move(right));
    return finish(std::move(e));
  }

  // Every node with operands passes here once they are attached: its height
  // on top of the levels enclosing it must fit the budget. Checked as each
  // link of a chain is added, so a refused chain is never built past it.
  Result<ExprPtr> finish(ExprPtr e) {
    int below = 0;
    for (const auto& arg : e->args)
      if (arg) below = std::max(below, arg->height);
    for (const auto& [key, arg] : e->kwargs) below = std::max(below, arg->height);
    e->height = below + 1;
    if (depth_ + e->height > kMaxNesting) return too_deep(e->pos, "expression");
    return e;
  }

  struct DepthGuard {
    explicit DepthGuard(int& d) : depth(d) { ++depth; }
    ~DepthGuard() { --depth; }
    int& depth;
  };

  Result<ExprPtr> parse_expression() {
    DepthGuard guard(depth_);
    if (depth_ > kMaxNesting) return too_deep(peek().pos, "expression");
    ASSIGN_OR_RETURN(ExprPtr value, parse_or_expression());
    while (is_name("if")) {
      const SourcePos at = next().pos;
      ExprPtr e = make(Expr::Kind::kTernary, at);
      ASSIGN_OR_RETURN(ExprPtr condition, parse_or_expression());
      ExprPtr otherwise;
      if (is_name("else")) {
        next();
        ASSIGN_OR_RETURN(otherwise, parse_expression());
      }
      e->args.push_back(std::move(value));
      e->args.push_back(std::move(condition));
      e->args.push_back(std::move(otherwise));
      ASSIGN_OR_RETURN(value, finish(std::move(e)));
    }
    return value;
  }

  Result<ExprPtr> parse_or_expression() {
    ASSIGN_OR_RETURN(ExprPtr left, parse_and());
    while (is_name("or")) {
      const SourcePos at = next().pos;
      ASSIGN_OR_RETURN(ExprPtr right, parse_and());
      ASSIGN_OR_RETURN(left, make_binary("or", std::move(left), std::move(right), at));
    }
    return left;
  }

  Result<ExprPtr> parse_and() {
    ASSIGN_OR_RETURN(ExprPtr left, parse_not());
    while (is_name("and")) {
      const SourcePos at = next().pos;
      ASSIGN_OR_RETURN(ExprPtr right, parse_not());
      ASSIGN_OR_RETURN(left, make_binary("and", std::move(left), std::move(right), at));
    }
    return left;
  }

  Result<ExprPtr> parse_not() {
    if (is_name("not")) {
      DepthGuard guard(depth_);
      if (depth_ > kMaxNesting) return too_deep(peek().pos, "expression");
      const SourcePos at = next().pos;
      ExprPtr e = make(Expr::Kind::kUnary, at);
      e->name = "not";
      ASSIGN_OR_RETURN(ExprPtr operand, parse_not());
      e->args.push_back(std::move(operand));
      return finish(std::move(e));
    }
    return parse_compare();
  }

  Result<ExprPtr> parse_compare() {
    ASSIGN_OR_RETURN(ExprPtr left, parse_math1());
    while (true) {
      const SourcePos at = peek().pos;
      std::string op;
      if (peek().kind == Kind::kOperator &&
          (peek().text == "==" || peek().text == "!=" || peek().text == "<" ||
           peek().text == "<=" || peek().text == ">" || peek().text == ">=")) {
        op = next().text;
      } else if (is_name("in")) {
        next();
        op = "in";
      } else if (is_name("not") && is_name("in", 1)) {
        next();
        next();
        op = "not in";
      } else {
        return left;
      }
      ASSIGN_OR_RETURN(ExprPtr right, parse_math1());
      ASSIGN_OR_RETURN(left, make_binary(op, std::move(left), std::move(right), at));
    }
  }

  Result<ExprPtr> parse_math1() {
    ASSIGN_OR_RETURN(ExprPtr left, parse_concat());
    while (is_op("+") || is_op("-")) {
      const Token op = next();
      ASSIGN_OR_RETURN(ExprPtr right, parse_concat());
      ASSIGN_OR_RETURN(left, make_binary(op.text, std::move(left), std::move(right), op.pos));
    }
    return left;
  }

  Result<ExprPtr> parse_concat() {
    ASSIGN_OR_RETURN(ExprPtr left, parse_math2());
    while (is_op("~")) {
      const Token op = next();
      ASSIGN_OR_RETURN(ExprPtr right, parse_math2());
      ASSIGN_OR_RETURN(left, make_binary("~", std::move(left), std::move(right), op.pos));
    }
    return left;
  }

  Result<ExprPtr> parse_math2() {
    ASSIGN_OR_RETURN(ExprPtr left, parse_pow());
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
      const Token op = next();
      ASSIGN_OR_RETURN(ExprPtr right, parse_pow());
      ASSIGN_OR_RETURN(left, make_binary(op.text, std::move(left), std::move(right), op.pos));
    }
    return left;
  }

  Result<ExprPtr> parse_pow() {
    ASSIGN_OR_RETURN(ExprPtr left, parse_unary(true));
    while (is_op("**")) {
      const Token op = next();
      ASSIGN_OR_RETURN(ExprPtr right, parse_unary(true));
      ASSIGN_OR_RETURN(left, make_binary("**", std::move(left), std::move(right), op.pos));
    }
    return left;
  }

  Result<ExprPtr> parse_unary(bool with_filter) {
    DepthGuard guard(depth_);
    if (depth_ > kMaxNesting) return too_deep(peek().pos, "expression");
    ExprPtr node;
    if (is_op("-") || is_op("+")) {
      const Token op = next();
      node = make(Expr::Kind::kUnary, op.pos);
      node->name = op.text;
      ASSIGN_OR_RETURN(ExprPtr operand, parse_unary(false));
      node->args.push_back(std::move(operand));
      ASSIGN_OR_RETURN(node, finish(std::move(node)));
    } else {
      ASSIGN_OR_RETURN(node, parse_primary());
    }
    ASSIGN_OR_RETURN(node, parse_postfix(std::move(node)));
    if (with_filter) return parse_filters_and_tests(std::move(node));
    return node;
  }

  Result<ExprPtr> parse_primary() {
    const Token t = next();
    switch (t.kind) {
      case Kind::kName: {
        ExprPtr e = make(Expr::Kind::kLiteral, t.pos);
        if (t.text == "true" || t.text == "True")
          e->literal = Value::boolean(true);
        else if (t.text == "false" || t.text == "False")
          e->literal = Value::boolean(false);
        else if (t.text == "none" || t.text == "None")
          e->literal = Value::none();
        else {
          e->kind = Expr::Kind::kName;
          e->name = t.text;
        }
        return e;
      }
      case Kind::kString: {
        std::string text = t.text;
        while (peek().kind == Kind::kString) text += next().text;  // "a" "b" is "ab"
        ExprPtr e = make(Expr::Kind::kLiteral, t.pos);
        e->literal = Value::string(std::move(text));
        return e;
      }
      case Kind::kInt: {
        int64_t v = 0;
        auto [end, ec] = std::from_chars(t.text.data(), t.text.data() + t.text.size(), v);
        ExprPtr e = make(Expr::Kind::kLiteral, t.pos);
        if (ec == std::errc())
          e->literal = Value::integer(v);
        else
          e->literal = Value::floating(std::strtod(t.text.c_str(), nullptr));
        return e;
      }
      case Kind::kFloat: {
        ExprPtr e = make(Expr::Kind::kLiteral, t.pos);
        e->literal = Value::floating(std::strtod(t.text.c_str(), nullptr));
        return e;
      }
      case Kind::kOperator:
        if (t.text == "(") {
          ASSIGN_OR_RETURN(ExprPtr first, parse_expression());
          if (is_op(")")) {
            next();
            return first;
          }
          ExprPtr tuple = make(Expr::Kind::kList, t.pos);
          tuple->args.push_back(std::move(first));
          while (is_op(",")) {
            next();
            if (is_op(")")) break;
            ASSIGN_OR_RETURN(ExprPtr item, parse_expression());
            tuple->args.push_back(std::move(item));
          }
          RETURN_IF_ERROR(expect_op(")"));
          return finish(std::move(tuple));
        }
        if (t.text == "[") {
          ExprPtr list = make(Expr::Kind::kList, t.pos);
          while (!is_op("]")) {
            ASSIGN_OR_RETURN(ExprPtr item, parse_expression());
            list->args.push_back(std::move(item));
            if (!is_op(",")) break;
            next();
          }
          RETURN_IF_ERROR(expect_op("]"));
          return finish(std::move(list));
        }
        if (t.text == "{") {
          ExprPtr dict = make(Expr::Kind::kDict, t.pos);
          while (!is_op("}")) {
            ASSIGN_OR_RETURN(ExprPtr key, parse_expression());
            RETURN_IF_ERROR(expect_op(":"));
            ASSIGN_OR_RETURN(ExprPtr value, parse_expression());
            dict->args.push_back(std::move(key));
            dict->args.push_back(std::move(value));
            if (!is_op(",")) break;
            next();
          }
          RETURN_IF_ERROR(expect_op("}"));
          return finish(std::move(dict));
        }
        break;
      default:
        break;
    }
    return error(t.pos, "expected an expression, found " + describe(t));
  }

  Result<ExprPtr> parse_postfix(ExprPtr node) {
    while (true) {
      if (is_op(".")) {
        const SourcePos at = next().pos;
        ExprPtr e = make(Expr::Kind::kAttribute, at);
        if (peek().kind == Kind::kInt) {  // foo.0 is foo[0]
          e->kind = Expr::Kind::kSubscript;
          ExprPtr index = make(Expr::Kind::kLiteral, peek().pos);
          index->literal = Value::integer(std::strtoll(next().text.c_str(), nullptr, 10));
          e->args.push_back(std::move(node));
          e->args.push_back(std::move(index));
        } else {
          ASSIGN_OR_RETURN(e->name, expect_name());
          e->args.push_back(std::move(node));
        }
        ASSIGN_OR_RETURN(node, finish(std::move(e)));
      } else if (is_op("[")) {
        ASSIGN_OR_RETURN(node, parse_subscript(std::move(node)));
      } else if (is_op("(")) {
        ASSIGN_OR_RETURN(node, parse_call(std::move(node)));
      } else {
        return node;
      }
    }
  }

  Result<ExprPtr> parse_subscript(ExprPtr node) {
    const SourcePos at = next().pos;
    std::vector<ExprPtr> parts;
    bool is_slice = false;
    ExprPtr current;
    while (!is_op("]")) {
      if (is_op(":")) {
        next();
        is_slice = true;
        parts.push_back(std::move(current));
        current = nullptr;
        continue;
      }
      if (current) return error(peek().pos, "expected ']' or ':' in a subscript");
      ASSIGN_OR_RETURN(current, parse_expression());
    }
    next();
    parts.push_back(std::move(current));
    if (!is_slice) {
      if (!parts[0]) return error(at, "empty subscript");
      ExprPtr e = make(Expr::Kind::kSubscript, at);
      e->args.push_back(std::move(node));
      e->args.push_back(std::move(parts[0]));
      return finish(std::move(e));
    }
    if (parts.size() > 3) return error(at, "a slice has at most start:stop:step");
    ExprPtr e = make(Expr::Kind::kSlice, at);
    e->args.push_back(std::move(node));
    for (auto& part : parts) e->args.push_back(std::move(part));
    while (e->args.size() < 4) e->args.push_back(nullptr);
    return finish(std::move(e));
  }

  // Positional and keyword arguments in parentheses into e->args / e->kwargs.
  Status parse_arguments(Expr& e) {
    RETURN_IF_ERROR(expect_op("("));
    while (!is_op(")")) {
      if (peek().kind == Kind::kName && is_op("=", 1)) {
        std::string key = next().text;
        next();
        ASSIGN_OR_RETURN(ExprPtr value, parse_expression());
        e.kwargs.emplace_back(std::move(key), std::move(value));
      } else {
        if (is_op("*") || is_op("**")) return unsupported(peek().pos, "argument unpacking (*, **)");
        if (!e.kwargs.empty()) return error(peek().pos, "positional argument after a keyword one");
        ASSIGN_OR_RETURN(ExprPtr value, parse_expression());
        e.args.push_back(std::move(value));
      }
      if (!is_op(",")) break;
      next();
    }
    return expect_op(")");
  }

  Result<ExprPtr> parse_call(ExprPtr callee) {
    ExprPtr e = make(Expr::Kind::kCall, peek().pos);
    e->args.push_back(std::move(callee));
    RETURN_IF_ERROR(parse_arguments(*e));
    return finish(std::move(e));
  }

  Result<ExprPtr> parse_filters_and_tests(ExprPtr node) {
    while (true) {
      if (is_op("|")) {
        next();
        ExprPtr e = make(Expr::Kind::kFilter, peek().pos);
        ASSIGN_OR_RETURN(e->name, expect_name());
        e->args.push_back(std::move(node));
        if (is_op("(")) RETURN_IF_ERROR(parse_arguments(*e));
        ASSIGN_OR_RETURN(node, finish(std::move(e)));
      } else if (is_name("is")) {
        next();
        ExprPtr e = make(Expr::Kind::kTest, peek().pos);
        if (is_name("not")) {
          next();
          e->negated = true;
        }
        if (peek().kind != Kind::kName &&
            !(peek().kind == Kind::kOperator && (peek().text == "==" || peek().text == "!=" ||
                                                 peek().text == "<" || peek().text == ">")))
          return error(peek().pos, "expected a test name after 'is'");
        e->name = next().text;
        e->args.push_back(std::move(node));
        if (is_op("(")) {
          RETURN_IF_ERROR(parse_arguments(*e));
        } else if (takes_bare_test_argument()) {
          ASSIGN_OR_RETURN(ExprPtr arg, parse_primary());
          ASSIGN_OR_RETURN(arg, parse_postfix(std::move(arg)));
          e->args.push_back(std::move(arg));
        }
        ASSIGN_OR_RETURN(node, finish(std::move(e)));
      } else if (is_op("(")) {
        ASSIGN_OR_RETURN(node, parse_call(std::move(node)));
      } else {
        return node;
      }
    }
  }

  // `x is divisibleby 3`, `x is sameas none`: one argument without parentheses.
  bool takes_bare_test_argument() const {
    const Token& t = peek();
    if (t.kind == Kind::kString || t.kind == Kind::kInt || t.kind == Kind::kFloat) return true;
    if (t.kind == Kind::kOperator) return t.text == "[" || t.text == "{";
    if (t.kind != Kind::kName) return false;
    static const std::set<std::string_view> kKeywords = {"else", "or", "and", "if",
                                                         "not",  "in", "is",  "recursive"};
    return !kKeywords.count(t.text);
  }

  std::vector<Token> tokens_;
  const std::string& origin_;
  std::size_t pos_ = 0;
  int depth_ = 0;
  int loop_depth_ = 0;
};

}  // namespace

Result<Program> parse_template(std::string_view source, std::string origin) {
  ASSIGN_OR_RETURN(std::vector<Token> tokens, tokenize(source, origin));
  Program program;
  Parser parser(std::move(tokens), origin);
  ASSIGN_OR_RETURN(program.body, parser.parse_all());
  program.origin = std::move(origin);
  return program;
}

}  // namespace tessera::chat
