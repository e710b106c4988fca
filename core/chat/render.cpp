#include "core/chat/render.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "core/chat/builtins.h"
#include "core/chat/format.h"
#include "core/chat/lexer.h"

namespace tessera::chat {
namespace {

enum class Flow { kNormal, kBreak, kContinue };

int64_t python_floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

class Renderer {
 public:
  Renderer(const Program& program, const Value& context, const std::tm& now,
           const RenderLimits& limits)
      : program_(program), context_(context), limits_(limits) {
    env_.max_string_bytes = limits.max_output_bytes;
    env_.max_items = limits.max_items;
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
    if (++steps_ > limits_.max_steps)
      return fail(pos, StatusCode::kResourceExhausted,
                  "template ran past " + std::to_string(limits_.max_steps) +
                      " steps; is it looping without end?");
    return ok_status();
  }
  Status check_size(SourcePos pos, std::size_t bytes) const {
    if (bytes > limits_.max_output_bytes)
      return fail(pos, StatusCode::kResourceExhausted,
                  "template output or a string it built passed " +
                      std::to_string(limits_.max_output_bytes) + " bytes");
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
    switch (stmt.kind) {
      case Stmt::Kind::kText:
        out += stmt.text;
        RETURN_IF_ERROR(check_size(stmt.pos, out.size()));
        return Flow::kNormal;
      case Stmt::Kind::kOutput: {
        ASSIGN_OR_RETURN(Value v, eval(*stmt.expr));
        out += to_output(v);
        RETURN_IF_ERROR(check_size(stmt.pos, out.size()));
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
        out += to_output(*filtered);
        RETURN_IF_ERROR(check_size(stmt.pos, out.size()));
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
    if (contains_container(value, target.container_identity()))
      return fail(stmt.pos, StatusCode::kInvalidArgument, "cannot store a namespace inside itself");
    target.mutable_object().set(stmt.attribute, std::move(value));
    return ok_status();
  }

  Result<Array> loop_items(const Stmt& stmt, const Value& iterable) {
    if (iterable.is_array()) return iterable.as_array();
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
    for (int64_t i = 0; i < n; ++i) {
      RETURN_IF_ERROR(step(stmt.pos));
      Object loop;
      loop.set("index", Value::integer(i + 1));
      loop.set("index0", Value::integer(i));
      loop.set("revindex", Value::integer(n - i));
      loop.set("revindex0", Value::integer(n - i - 1));
      loop.set("first", Value::boolean(i == 0));
      loop.set("last", Value::boolean(i == n - 1));
      loop.set("length", Value::integer(n));
      loop.set("previtem", i > 0 ? items[static_cast<std::size_t>(i - 1)] : Value());
      loop.set("nextitem", i + 1 < n ? items[static_cast<std::size_t>(i + 1)] : Value());
      scopes_.back().set("loop", Value::object(std::move(loop)));
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
    RETURN_IF_ERROR(step(e.pos));
    auto result = eval_inner(e);
    if (!result.ok()) return located(e.pos, result.status());
    if (result->is_string()) RETURN_IF_ERROR(check_size(e.pos, result->as_string().size()));
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
        ASSIGN_OR_RETURN(bool passed, apply_test(e.name, subject, args));
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
                              to_repr(key));
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
    if (op == "~") return Value::string(to_output(a) + to_output(b));
    if (op == "==") return Value::boolean(values_equal(a, b));
    if (op == "!=") return Value::boolean(!values_equal(a, b));
    if (op == "in" || op == "not in") {
      bool found = false;
      if (b.is_string()) {
        if (!a.is_string())
          return invalid_argument("'in <string>' needs a string on the left, not a " +
                                  std::string(a.type_name()));
        found = b.as_string().find(a.as_string()) != std::string::npos;
      } else if (b.is_array()) {
        for (const Value& item : b.as_array()) found = found || values_equal(item, a);
      } else if (b.is_object()) {
        found = a.is_string() && b.as_object().find(a.as_string()) != nullptr;
      } else if (!b.is_undefined()) {
        return invalid_argument("'in' needs a string, list or dict on the right, not a " +
                                std::string(b.type_name()));
      }
      return Value::boolean(found == (op == "in"));
    }
    if (op == "<" || op == "<=" || op == ">" || op == ">=") return compare(op, a, b);
    return arithmetic(op, a, b, e.pos);
  }

  Result<Value> compare(const std::string& op, const Value& a, const Value& b) {
    int order = 0;
    if ((a.is_number() || a.is_bool()) && (b.is_number() || b.is_bool())) {
      const double x = a.as_double(), y = b.as_double();
      if (a.is_int() && b.is_int())
        order = a.as_int() < b.as_int() ? -1 : a.as_int() > b.as_int();
      else if (std::isnan(x) || std::isnan(y))
        return Value::boolean(false);
      else
        order = x < y ? -1 : x > y;
    } else if (a.is_string() && b.is_string()) {
      const int c = a.as_string().compare(b.as_string());
      order = c < 0 ? -1 : c > 0;
    } else {
      return invalid_argument("'" + op + "' not supported between a " + std::string(a.type_name()) +
                              " and a " + std::string(b.type_name()));
    }
    if (op == "<") return Value::boolean(order < 0);
    if (op == "<=") return Value::boolean(order <= 0);
    if (op == ">") return Value::boolean(order > 0);
    return Value::boolean(order >= 0);
  }

  Result<Value> repeat(const Value& sequence, const Value& times, SourcePos pos) {
    const int64_t n = std::max<int64_t>(0, times.is_bool() ? times.as_bool() : times.as_int());
    if (sequence.is_string()) {
      const std::size_t unit = sequence.as_string().size();
      if (unit > 0 && static_cast<uint64_t>(n) > limits_.max_output_bytes / unit)
        return check_size(pos, limits_.max_output_bytes + 1);
      std::string out;
      for (int64_t i = 0; i < n; ++i) out += sequence.as_string();
      return Value::string(std::move(out));
    }
    const std::size_t unit = sequence.as_array().size();
    if (unit > 0 && static_cast<uint64_t>(n) > limits_.max_items / unit)
      return resource_exhausted("list repetition past " + std::to_string(limits_.max_items) +
                                " items");
    Array out;
    for (int64_t i = 0; i < n; ++i)
      out.insert(out.end(), sequence.as_array().begin(), sequence.as_array().end());
    return Value::array(std::move(out));
  }

  Result<Value> arithmetic(const std::string& op, const Value& a, const Value& b, SourcePos pos) {
    if (op == "+") {
      if (a.is_string() && b.is_string()) return Value::string(a.as_string() + b.as_string());
      if (a.is_array() && b.is_array()) {
        if (a.as_array().size() + b.as_array().size() > limits_.max_items)
          return resource_exhausted("list concatenation past " + std::to_string(limits_.max_items) +
                                    " items");
        Array out = a.as_array();
        out.insert(out.end(), b.as_array().begin(), b.as_array().end());
        return Value::array(std::move(out));
      }
    }
    if (op == "*") {
      if ((a.is_string() || a.is_array()) && (b.is_int() || b.is_bool())) return repeat(a, b, pos);
      if ((b.is_string() || b.is_array()) && (a.is_int() || a.is_bool())) return repeat(b, a, pos);
    }
    const bool numeric = (a.is_number() || a.is_bool()) && (b.is_number() || b.is_bool());
    if (!numeric)
      return invalid_argument("unsupported operand types for " + op + ": " +
                              std::string(a.type_name()) + " and " + std::string(b.type_name()));
    const bool integers = !a.is_float() && !b.is_float();
    const int64_t x = a.is_bool() ? a.as_bool() : a.is_int() ? a.as_int() : 0;
    const int64_t y = b.is_bool() ? b.as_bool() : b.is_int() ? b.as_int() : 0;
    const double fx = a.as_double(), fy = b.as_double();
    if (integers && op != "/" && op != "**") {
      int64_t r = 0;
      bool overflow = false;
      if (op == "+")
        overflow = __builtin_add_overflow(x, y, &r);
      else if (op == "-")
        overflow = __builtin_sub_overflow(x, y, &r);
      else if (op == "*")
        overflow = __builtin_mul_overflow(x, y, &r);
      else {
        if (y == 0) return invalid_argument("integer division or modulo by zero");
        if (x == INT64_MIN && y == -1)
          overflow = true;
        else if (op == "//")
          r = python_floor_div(x, y);
        else
          r = x - python_floor_div(x, y) * y;
      }
      if (overflow) return invalid_argument("integer overflow in " + op);
      return Value::integer(r);
    }
    if (op == "+") return Value::floating(fx + fy);
    if (op == "-") return Value::floating(fx - fy);
    if (op == "*") return Value::floating(fx * fy);
    if (op == "**") {
      if (integers && y >= 0) {
        if (x == 0 || x == 1) return Value::integer(y == 0 ? 1 : x);
        if (x == -1) return Value::integer(y % 2 == 0 ? 1 : -1);
        int64_t r = 1;  // |x| >= 2 overflows within 64 steps
        for (int64_t i = 0; i < y; ++i)
          if (__builtin_mul_overflow(r, x, &r)) return invalid_argument("integer overflow in **");
        return Value::integer(r);
      }
      return Value::floating(std::pow(fx, fy));
    }
    if (fy == 0.0) return invalid_argument("division by zero");
    if (op == "/") return Value::floating(fx / fy);
    if (op == "//") return Value::floating(std::floor(fx / fy));
    double r = std::fmod(fx, fy);
    if (r != 0.0 && ((r < 0) != (fy < 0))) r += fy;
    return Value::floating(r);
  }

  const Program& program_;
  const Value& context_;
  RenderLimits limits_;
  BuiltinEnv env_;
  static constexpr int kMaxMacroDepth = 64;
  std::vector<Object> scopes_;
  std::map<std::string, const Stmt*> macros_;
  int macro_depth_ = 0;
  uint64_t steps_ = 0;
};

// ---- check_supported ----

void collect_macros(const Body& body, std::set<std::string>& names) {
  for (const auto& stmt : body) {
    if (stmt->kind == Stmt::Kind::kMacro) names.insert(stmt->text);
    for (const auto& [condition, branch] : stmt->branches) collect_macros(branch, names);
    collect_macros(stmt->body, names);
    collect_macros(stmt->else_body, names);
  }
}

Status check_expr(const Program& program, const std::set<std::string>& macros, const Expr& e) {
  const auto refuse = [&](const std::string& what) {
    return unimplemented(where(program.origin, e.pos) + what +
                         " is not supported by tessera's chat-template renderer "
                         "(docs/chat-templates.md lists what is)");
  };
  if (e.kind == Expr::Kind::kFilter && !is_known_filter(e.name))
    return refuse("the filter '" + e.name + "'");
  if (e.kind == Expr::Kind::kTest && !is_known_test(e.name))
    return refuse("the test '" + e.name + "'");
  if (e.kind == Expr::Kind::kCall) {
    const Expr& callee = *e.args[0];
    if (callee.kind == Expr::Kind::kAttribute && !is_known_method(callee.name))
      return refuse("the method '" + callee.name + "'");
    if (callee.kind == Expr::Kind::kName && !is_known_global(callee.name) &&
        !macros.count(callee.name))
      return refuse("the function '" + callee.name + "'");
    if (callee.kind != Expr::Kind::kAttribute && callee.kind != Expr::Kind::kName)
      return refuse("calling the result of an expression");
  }
  for (const auto& arg : e.args)
    if (arg) RETURN_IF_ERROR(check_expr(program, macros, *arg));
  for (const auto& [key, arg] : e.kwargs) RETURN_IF_ERROR(check_expr(program, macros, *arg));
  return ok_status();
}

Status check_body(const Program& program, const std::set<std::string>& macros, const Body& body) {
  for (const auto& stmt : body) {
    if (stmt->expr) RETURN_IF_ERROR(check_expr(program, macros, *stmt->expr));
    if (stmt->condition) RETURN_IF_ERROR(check_expr(program, macros, *stmt->condition));
    for (const auto& fallback : stmt->defaults)
      if (fallback) RETURN_IF_ERROR(check_expr(program, macros, *fallback));
    for (const auto& [condition, branch] : stmt->branches) {
      RETURN_IF_ERROR(check_expr(program, macros, *condition));
      RETURN_IF_ERROR(check_body(program, macros, branch));
    }
    RETURN_IF_ERROR(check_body(program, macros, stmt->body));
    RETURN_IF_ERROR(check_body(program, macros, stmt->else_body));
  }
  return ok_status();
}

}  // namespace

Result<std::string> render_program(const Program& program, const Value& context, const std::tm& now,
                                   const RenderLimits& limits) {
  if (!context.is_object() && !context.is_undefined())
    return invalid_argument("the chat template context must be an object, not a " +
                            std::string(context.type_name()));
  return Renderer(program, context, now, limits).run();
}

Status check_supported(const Program& program) {
  std::set<std::string> macros;
  collect_macros(program.body, macros);
  return check_body(program, macros, program.body);
}

}  // namespace tessera::chat
