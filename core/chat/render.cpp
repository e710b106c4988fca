#include "core/chat/render.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "core/chat/builtins.h"
#include "core/chat/format.h"
#include "core/chat/lexer.h"
#include "core/chat/operators.h"

namespace tessera::chat {
namespace {

enum class Flow { kNormal, kBreak, kContinue };

class Renderer {
 public:
  Renderer(const Program& program, const Value& context, const std::tm& now,
           const RenderLimits& limits)
      : program_(program), context_(context), limits_(limits), budget_(limits) {
    env_.budget = &budget_;
    env_.now = now;
    scopes_.emplace_back();
  }

  Result<std::string> run() {
    std::string out;
    ASSIGN_OR_RETURN(Flow flow, exec(program_.body, out));
    (void)flow;
    return out;
  }

 private:
  Status located(SourcePos pos, const Status& status) const {
    std::string message = status.message();
    if (message.rfind(program_.origin + ":", 0) == 0) return status;  // already located
    return Status(status.code(), where(program_.origin, pos) + message);
  }
  Status fail(SourcePos pos, StatusCode code, const std::string& message) const {
    return Status(code, where(program_.origin, pos) + message);
  }
  Status step(SourcePos pos) {
    if (Status spent = budget_.charge(); !spent.ok()) return located(pos, spent);
    return ok_status();
  }
  // exec and eval recurse once per level of the program they run, and each
  // macro call stacks a whole body on the calls below it: counted together.
  class Nested {
   public:
    explicit Nested(int& depth) : depth_(depth) { ++depth_; }
    ~Nested() { --depth_; }
    Nested(const Nested&) = delete;
    Nested& operator=(const Nested&) = delete;

   private:
    int& depth_;
  };
  Status check_depth(SourcePos pos) const {
    if (depth_ > kMaxRenderDepth)
      return fail(pos, StatusCode::kResourceExhausted,
                  "template nested deeper than " + std::to_string(kMaxRenderDepth) +
                      " levels while rendering (blocks and expressions, through macro calls)");
    return ok_status();
  }
  Status check_size(SourcePos pos, std::size_t bytes) const {
    if (Status size = budget_.check_bytes(bytes); !size.ok()) return located(pos, size);
    return ok_status();
  }
  // str(v) appended to the output, checked as it grows (a shared value's
  // text stops at the limit instead of being built whole first).
  Status print(SourcePos pos, const Value& v, std::string& out) {
    TextSink sink(out, limits_.max_output_bytes, &budget_);
    if (Status printed = append_output(v, sink); !printed.ok()) return located(pos, printed);
    return ok_status();
  }

  // ---- variables ----

  Value lookup(const std::string& name) const {
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it)
      if (const Value* v = it->find(name)) return *v;
    if (context_.is_object())
      if (const Value* v = context_.as_object().find(name)) return *v;
    if (is_known_global(name)) return Value::function(name);
    return Value();
  }

  Status assign(const Stmt& stmt, const std::vector<std::string>& targets, const Value& value) {
    if (targets.size() == 1) {
      scopes_.back().set(targets[0], value);
      return ok_status();
    }
    if (!value.is_array())
      return fail(stmt.pos, StatusCode::kInvalidArgument,
                  "cannot unpack a " + std::string(value.type_name()) + " into " +
                      std::to_string(targets.size()) + " names");
    if (value.as_array().size() != targets.size())
      return fail(stmt.pos, StatusCode::kInvalidArgument,
                  "cannot unpack " + std::to_string(value.as_array().size()) + " values into " +
                      std::to_string(targets.size()) + " names");
    for (std::size_t i = 0; i < targets.size(); ++i)
      scopes_.back().set(targets[i], value.as_array()[i]);
    return ok_status();
  }

  // ---- statements ----

  Result<Flow> exec(const Body& body, std::string& out) {
    for (const auto& stmt : body) {
      RETURN_IF_ERROR(step(stmt->pos));
      ASSIGN_OR_RETURN(Flow flow, exec_one(*stmt, out));
      if (flow != Flow::kNormal) return flow;
    }
    return Flow::kNormal;
  }

  Result<Flow> exec_one(const Stmt& stmt, std::string& out) {
    const Nested nested(depth_);
    RETURN_IF_ERROR(check_depth(stmt.pos));
    switch (stmt.kind) {
      case Stmt::Kind::kText:
        out += stmt.text;
        RETURN_IF_ERROR(check_size(stmt.pos, out.size()));
        return Flow::kNormal;
      case Stmt::Kind::kOutput: {
        ASSIGN_OR_RETURN(Value v, eval(*stmt.expr));
        RETURN_IF_ERROR(print(stmt.pos, v, out));
        return Flow::kNormal;
      }
      case Stmt::Kind::kIf:
        for (const auto& [condition, branch] : stmt.branches) {
          ASSIGN_OR_RETURN(Value test, eval(*condition));
          if (test.truthy()) return exec(branch, out);
        }
        return exec(stmt.else_body, out);
      case Stmt::Kind::kFor:
        RETURN_IF_ERROR(exec_for(stmt, out));
        return Flow::kNormal;
      case Stmt::Kind::kSet:
        RETURN_IF_ERROR(exec_set(stmt));
        return Flow::kNormal;
      case Stmt::Kind::kBreak:
        return Flow::kBreak;
      case Stmt::Kind::kContinue:
        return Flow::kContinue;
      case Stmt::Kind::kFilterBlock: {
        std::string text;
        ASSIGN_OR_RETURN(Flow flow, exec(stmt.body, text));
        ASSIGN_OR_RETURN(CallArgs args, eval_args(*stmt.expr, 1));
        auto filtered = apply_filter(stmt.expr->name, Value::string(std::move(text)), args, env_);
        if (!filtered.ok()) return located(stmt.expr->pos, filtered.status());
        RETURN_IF_ERROR(print(stmt.pos, *filtered, out));
        return flow;
      }
      case Stmt::Kind::kMacro:
        macros_[stmt.text] = &stmt;
        scopes_.back().set(stmt.text, Value::function(stmt.text));
        return Flow::kNormal;
    }
    return Flow::kNormal;
  }

  Status exec_set(const Stmt& stmt) {
    Value value;
    if (stmt.expr) {
      ASSIGN_OR_RETURN(value, eval(*stmt.expr));
    } else {
      std::string text;
      ASSIGN_OR_RETURN(Flow flow, exec(stmt.body, text));
      (void)flow;
      value = Value::string(std::move(text));
    }
    if (stmt.attribute.empty()) return assign(stmt, stmt.targets, value);
    const Value target = lookup(stmt.targets[0]);
    if (!target.is_namespace())
      return fail(stmt.pos, StatusCode::kInvalidArgument,
                  "cannot set an attribute of '" + stmt.targets[0] + "' (a " +
                      std::string(target.type_name()) + "); only a namespace() takes attributes");
    auto cycle = contains_container(value, target.container_identity(), budget_);
    if (!cycle.ok()) return located(stmt.pos, cycle.status());
    if (*cycle)
      return fail(stmt.pos, StatusCode::kInvalidArgument, "cannot store a namespace inside itself");
    target.mutable_object().set(stmt.attribute, std::move(value));
    return ok_status();
  }

  Result<Array> loop_items(const Stmt& stmt, Value iterable) {
    if (iterable.is_array()) {
      if (iterable.as_array().size() > limits_.max_items)
        return fail(stmt.pos, StatusCode::kResourceExhausted, "loop over too many items");
      // The loop runs over a copy (its body may append to the list).
      if (Status copy = budget_.charge_items(iterable.as_array().size()); !copy.ok())
        return located(stmt.pos, copy);
      return iterable.as_array();
    }
    if (iterable.is_undefined() || iterable.is_none()) {
      if (iterable.is_none())
        return fail(stmt.pos, StatusCode::kInvalidArgument, "cannot loop over none");
      return Array{};
    }
    CallArgs none;
    if (iterable.is_object() || iterable.is_string()) {
      ASSIGN_OR_RETURN(Value list, apply_filter("list", iterable, none, env_));
      return list.as_array();
    }
    return fail(stmt.pos, StatusCode::kInvalidArgument,
                "cannot loop over a " + std::string(iterable.type_name()));
  }

  Status exec_for(const Stmt& stmt, std::string& out) {
    ASSIGN_OR_RETURN(Value iterable, eval(*stmt.expr));
    auto all = loop_items(stmt, iterable);
    if (!all.ok()) return located(stmt.pos, all.status());
    scopes_.emplace_back();
    Status status = run_loop(stmt, std::move(all).value(), out);
    scopes_.pop_back();
    return status;
  }

  Status run_loop(const Stmt& stmt, Array all, std::string& out) {
    Array items;
    if (stmt.condition) {
      for (Value& item : all) {
        RETURN_IF_ERROR(step(stmt.pos));
        RETURN_IF_ERROR(assign(stmt, stmt.targets, item));
        ASSIGN_OR_RETURN(Value keep, eval(*stmt.condition));
        if (keep.truthy()) items.push_back(std::move(item));
      }
    } else {
      items = std::move(all);
    }
    const int64_t n = static_cast<int64_t>(items.size());
    // One loop object, updated in place each iteration (cheaper than a new
    // one; a template that keeps `loop` sees it advance, as the loop does).
    Value loop = Value::object();
    scopes_.back().set("loop", loop);
    Object& fields = loop.mutable_object();
    for (int64_t i = 0; i < n; ++i) {
      RETURN_IF_ERROR(step(stmt.pos));
      fields.set("index", Value::integer(i + 1));
      fields.set("index0", Value::integer(i));
      fields.set("revindex", Value::integer(n - i));
      fields.set("revindex0", Value::integer(n - i - 1));
      fields.set("first", Value::boolean(i == 0));
      fields.set("last", Value::boolean(i == n - 1));
      fields.set("length", Value::integer(n));
      fields.set("previtem", i > 0 ? items[static_cast<std::size_t>(i - 1)] : Value());
      fields.set("nextitem", i + 1 < n ? items[static_cast<std::size_t>(i + 1)] : Value());
      RETURN_IF_ERROR(assign(stmt, stmt.targets, items[static_cast<std::size_t>(i)]));
      ASSIGN_OR_RETURN(Flow flow, exec(stmt.body, out));
      if (flow == Flow::kBreak) break;
    }
    if (n == 0) {
      ASSIGN_OR_RETURN(Flow flow, exec(stmt.else_body, out));
      (void)flow;
    }
    return ok_status();
  }

  // ---- expressions ----

  Result<Value> eval(const Expr& e) {
    const Nested nested(depth_);
    RETURN_IF_ERROR(check_depth(e.pos));
    RETURN_IF_ERROR(step(e.pos));
    auto result = eval_inner(e);
    if (!result.ok()) return located(e.pos, result.status());
    // Every string an expression yields was built or copied: paid by size.
    if (result->is_string())
      if (Status paid = budget_.charge_string(result->as_string().size()); !paid.ok())
        return located(e.pos, paid);
    return result;
  }

  Result<CallArgs> eval_args(const Expr& e, std::size_t first) {
    CallArgs args;
    for (std::size_t i = first; i < e.args.size(); ++i) {
      ASSIGN_OR_RETURN(Value v, eval(*e.args[i]));
      args.positional.push_back(std::move(v));
    }
    for (const auto& [key, expr] : e.kwargs) {
      ASSIGN_OR_RETURN(Value v, eval(*expr));
      args.keyword.emplace_back(key, std::move(v));
    }
    return args;
  }

  Result<Value> eval_inner(const Expr& e) {
    switch (e.kind) {
      case Expr::Kind::kLiteral:
        return e.literal;
      case Expr::Kind::kName:
        return lookup(e.name);
      case Expr::Kind::kList: {
        Array items;
        for (const auto& arg : e.args) {
          ASSIGN_OR_RETURN(Value v, eval(*arg));
          items.push_back(std::move(v));
        }
        return Value::array(std::move(items));
      }
      case Expr::Kind::kDict: {
        Object entries;
        for (std::size_t i = 0; i + 1 < e.args.size(); i += 2) {
          ASSIGN_OR_RETURN(Value key, eval(*e.args[i]));
          if (!key.is_string())
            return invalid_argument("dict keys must be strings in this renderer");
          ASSIGN_OR_RETURN(Value value, eval(*e.args[i + 1]));
          entries.set(key.as_string(), std::move(value));
        }
        return Value::object(std::move(entries));
      }
      case Expr::Kind::kAttribute: {
        ASSIGN_OR_RETURN(Value object, eval(*e.args[0]));
        return member(object, Value::string(e.name), *e.args[0]);
      }
      case Expr::Kind::kSubscript: {
        ASSIGN_OR_RETURN(Value object, eval(*e.args[0]));
        ASSIGN_OR_RETURN(Value key, eval(*e.args[1]));
        return member(object, key, *e.args[0]);
      }
      case Expr::Kind::kSlice:
        return eval_slice(e);
      case Expr::Kind::kCall:
        return eval_call(e);
      case Expr::Kind::kFilter: {
        ASSIGN_OR_RETURN(Value subject, eval(*e.args[0]));
        ASSIGN_OR_RETURN(CallArgs args, eval_args(e, 1));
        return apply_filter(e.name, subject, args, env_);
      }
      case Expr::Kind::kTest: {
        ASSIGN_OR_RETURN(Value subject, eval(*e.args[0]));
        ASSIGN_OR_RETURN(CallArgs args, eval_args(e, 1));
        ASSIGN_OR_RETURN(bool passed, apply_test(e.name, subject, args, env_));
        return Value::boolean(passed != e.negated);
      }
      case Expr::Kind::kUnary:
        return eval_unary(e);
      case Expr::Kind::kBinary:
        return eval_binary(e);
      case Expr::Kind::kTernary: {
        ASSIGN_OR_RETURN(Value condition, eval(*e.args[1]));
        if (condition.truthy()) return eval(*e.args[0]);
        if (e.args[2]) return eval(*e.args[2]);
        return Value();
      }
    }
    return internal_error("unknown expression kind");
  }

  static std::string describe(const Expr& e) {
    if (e.kind == Expr::Kind::kName) return "'" + e.name + "'";
    if (e.kind == Expr::Kind::kAttribute) return describe(*e.args[0]) + "." + e.name;
    return "the value";
  }

  Result<Value> member(const Value& object, const Value& key, const Expr& object_expr) {
    if (object.is_undefined())
      return invalid_argument(describe(object_expr) + " is undefined, so it has no member " +
                              short_repr(key));
    if (object.is_object()) {
      if (!key.is_string()) return Value();
      const Value* found = object.as_object().find(key.as_string());
      return found ? *found : Value();
    }
    if ((object.is_array() || object.is_string()) && key.is_int()) {
      std::vector<std::size_t> offsets;
      int64_t size = 0;
      if (object.is_array()) {
        size = static_cast<int64_t>(object.as_array().size());
      } else {
        offsets = utf8_char_offsets(object.as_string());
        size = static_cast<int64_t>(offsets.size()) - 1;
      }
      int64_t index = key.as_int();
      if (index < 0) index += size;
      if (index < 0 || index >= size) return Value();
      const auto at = static_cast<std::size_t>(index);
      if (object.is_array()) return object.as_array()[at];
      return Value::string(object.as_string().substr(offsets[at], offsets[at + 1] - offsets[at]));
    }
    return Value();
  }

  Result<Value> eval_slice(const Expr& e) {
    ASSIGN_OR_RETURN(Value object, eval(*e.args[0]));
    int64_t bounds[3] = {0, 0, 1};
    bool given[3] = {false, false, false};
    for (int k = 0; k < 3; ++k) {
      if (!e.args[static_cast<std::size_t>(k) + 1]) continue;
      ASSIGN_OR_RETURN(Value v, eval(*e.args[static_cast<std::size_t>(k) + 1]));
      if (v.is_none() || v.is_undefined()) continue;
      if (!v.is_int()) return invalid_argument("slice bounds must be integers");
      bounds[k] = v.as_int();
      given[k] = true;
    }
    const int64_t step = given[2] ? bounds[2] : 1;
    if (step == 0) return invalid_argument("slice step cannot be zero");
    Array items;
    if (object.is_array()) {
      RETURN_IF_ERROR(budget_.charge_items(object.as_array().size()));
      items = object.as_array();
    } else if (object.is_string()) {
      CallArgs none;
      ASSIGN_OR_RETURN(Value chars, apply_filter("list", object, none, env_));
      items = chars.as_array();
    } else {
      return invalid_argument("cannot slice a " + std::string(object.type_name()));
    }
    const int64_t n = static_cast<int64_t>(items.size());
    const auto clamp = [&](int64_t v, bool is_given, int64_t fallback) {
      if (!is_given) return fallback;
      if (v < 0) v += n;
      if (step > 0) return std::clamp<int64_t>(v, 0, n);
      return std::clamp<int64_t>(v, -1, n - 1);
    };
    const int64_t start = clamp(bounds[0], given[0], step > 0 ? 0 : n - 1);
    const int64_t stop = clamp(bounds[1], given[1], step > 0 ? n : -1);
    Array out;
    for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
      out.push_back(items[static_cast<std::size_t>(i)]);
      if ((step > 0 && i > INT64_MAX - step) || (step < 0 && i < INT64_MIN - step)) break;
    }
    if (object.is_array()) return Value::array(std::move(out));
    std::string text;
    for (const Value& c : out) text += c.as_string();
    return Value::string(std::move(text));
  }

  Result<Value> eval_call(const Expr& e) {
    const Expr& callee = *e.args[0];
    ASSIGN_OR_RETURN(CallArgs args, eval_args(e, 1));
    if (callee.kind == Expr::Kind::kAttribute) {
      ASSIGN_OR_RETURN(Value object, eval(*callee.args[0]));
      if (object.is_undefined())
        return invalid_argument(describe(*callee.args[0]) + " is undefined, so it has no method '" +
                                callee.name + "'");
      return call_method(object, callee.name, args, env_);
    }
    if (callee.kind == Expr::Kind::kName) {
      const Value function = lookup(callee.name);
      if (function.is_function()) {
        const auto macro = macros_.find(function.as_string());
        if (macro != macros_.end()) return call_macro(*macro->second, args);
        return call_global(function.as_string(), args, env_);
      }
    }
    return invalid_argument(describe(callee) + " is not a function this renderer can call");
  }

  // A macro renders its body in a scope of its own above the template's
  // top-level variables, and returns the text.
  Result<Value> call_macro(const Stmt& macro, const CallArgs& args) {
    if (args.positional.size() > macro.targets.size())
      return invalid_argument("macro '" + macro.text + "' takes " +
                              std::to_string(macro.targets.size()) + " arguments, got " +
                              std::to_string(args.positional.size()));
    for (const auto& [key, value] : args.keyword)
      if (std::find(macro.targets.begin(), macro.targets.end(), key) == macro.targets.end())
        return invalid_argument("macro '" + macro.text + "' has no parameter '" + key + "'");
    if (macro_depth_ >= kMaxMacroDepth)
      return resource_exhausted("macro calls nested deeper than " + std::to_string(kMaxMacroDepth));
    // The call copies the top-level scope (one item per variable).
    RETURN_IF_ERROR(budget_.charge(scopes_.front().size()));
    std::vector<Object> caller_scopes;
    caller_scopes.swap(scopes_);
    scopes_.push_back(caller_scopes.front());
    scopes_.emplace_back();
    ++macro_depth_;
    auto result = run_macro(macro, args);
    --macro_depth_;
    scopes_.swap(caller_scopes);
    return result;
  }

  Result<Value> run_macro(const Stmt& macro, const CallArgs& args) {
    for (std::size_t i = 0; i < macro.targets.size(); ++i) {
      Value value = args.get(i, macro.targets[i]);
      if (i >= args.positional.size() && value.is_undefined() && macro.defaults[i]) {
        ASSIGN_OR_RETURN(value, eval(*macro.defaults[i]));
      }
      scopes_.back().set(macro.targets[i], std::move(value));
    }
    std::string text;
    ASSIGN_OR_RETURN(Flow flow, exec(macro.body, text));
    (void)flow;
    return Value::string(std::move(text));
  }

  Result<Value> eval_unary(const Expr& e) {
    ASSIGN_OR_RETURN(Value v, eval(*e.args[0]));
    if (e.name == "not") return Value::boolean(!v.truthy());
    if (v.is_bool()) v = Value::integer(v.as_bool());
    if (e.name == "+" && v.is_number()) return v;
    if (v.is_int() && v.as_int() != INT64_MIN) return Value::integer(-v.as_int());
    if (v.is_int()) return Value::floating(-v.as_double());
    if (v.is_float()) return Value::floating(-v.as_float());
    return invalid_argument("bad operand type for unary " + e.name + ": " +
                            std::string(v.type_name()));
  }

  Result<Value> eval_binary(const Expr& e) {
    const std::string& op = e.name;
    ASSIGN_OR_RETURN(Value a, eval(*e.args[0]));
    if (op == "and") return a.truthy() ? eval(*e.args[1]) : a;
    if (op == "or") return a.truthy() ? a : eval(*e.args[1]);
    ASSIGN_OR_RETURN(Value b, eval(*e.args[1]));
    return apply_binary_operator(op, a, b, budget_);
  }

  const Program& program_;
  const Value& context_;
  RenderLimits limits_;
  Budget budget_;
  BuiltinEnv env_;
  static constexpr int kMaxMacroDepth = 64;
  // The parser keeps one body within 96 levels; this bounds the stack when
  // macro calls stack bodies. A level is a few frames of exec or eval, up to
  // 7 KB in the ASan debug build: 128 of them fit a 1 MB thread stack.
  static constexpr int kMaxRenderDepth = 128;
  std::vector<Object> scopes_;
  std::map<std::string, const Stmt*> macros_;
  int macro_depth_ = 0;
  int depth_ = 0;
};

}  // namespace

Result<std::string> render_program(const Program& program, const Value& context, const std::tm& now,
                                   const RenderLimits& limits) {
  if (!context.is_object() && !context.is_undefined())
    return invalid_argument("the chat template context must be an object, not a " +
                            std::string(context.type_name()));
  const Value isolated = deep_copy(context);  // the template may append to lists it was given
  return Renderer(program, isolated, now, limits).run();
}

}  // namespace tessera::chat
