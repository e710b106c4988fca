#include "core/chat/operators.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/chat/builtins.h"
#include "core/chat/format.h"

namespace tessera::chat {
namespace {

int64_t python_floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

Result<Value> compare(std::string_view op, const Value& a, const Value& b) {
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
    return invalid_argument("'" + std::string(op) + "' not supported between a " +
                            std::string(a.type_name()) + " and a " + std::string(b.type_name()));
  }
  if (op == "<") return Value::boolean(order < 0);
  if (op == "<=") return Value::boolean(order <= 0);
  if (op == ">") return Value::boolean(order > 0);
  return Value::boolean(order >= 0);
}

Result<Value> repeat(const Value& sequence, const Value& times, Budget& budget) {
  const RenderLimits& limits = budget.limits();
  const int64_t n = std::max<int64_t>(0, times.is_bool() ? times.as_bool() : times.as_int());
  // Nothing repeated any number of times is nothing (and must not loop 2**62 times).
  const bool empty =
      sequence.is_string() ? sequence.as_string().empty() : sequence.as_array().empty();
  if (empty) return sequence.is_string() ? Value::string("") : Value::array();
  if (sequence.is_string()) {
    const std::size_t unit = sequence.as_string().size();
    if (static_cast<uint64_t>(n) > limits.max_output_bytes / unit)
      return resource_exhausted("string repetition past " +
                                std::to_string(limits.max_output_bytes) + " bytes");
    std::string out;
    for (int64_t i = 0; i < n; ++i) out += sequence.as_string();
    return Value::string(std::move(out));
  }
  const std::size_t unit = sequence.as_array().size();
  if (static_cast<uint64_t>(n) > limits.max_items / unit)
    return resource_exhausted("list repetition past " + std::to_string(limits.max_items) +
                              " items");
  RETURN_IF_ERROR(budget.charge_items(static_cast<std::size_t>(n) * unit));
  Array out;
  for (int64_t i = 0; i < n; ++i)
    out.insert(out.end(), sequence.as_array().begin(), sequence.as_array().end());
  return Value::array(std::move(out));
}

Result<Value> arithmetic(std::string_view op, const Value& a, const Value& b, Budget& budget) {
  const RenderLimits& limits = budget.limits();
  if (op == "+") {
    if (a.is_string() && b.is_string()) return Value::string(a.as_string() + b.as_string());
    if (a.is_array() && b.is_array()) {
      if (a.as_array().size() + b.as_array().size() > limits.max_items)
        return resource_exhausted("list concatenation past " + std::to_string(limits.max_items) +
                                  " items");
      RETURN_IF_ERROR(budget.charge_items(a.as_array().size() + b.as_array().size()));
      Array out = a.as_array();
      out.insert(out.end(), b.as_array().begin(), b.as_array().end());
      return Value::array(std::move(out));
    }
  }
  if (op == "*") {
    if ((a.is_string() || a.is_array()) && (b.is_int() || b.is_bool())) return repeat(a, b, budget);
    if ((b.is_string() || b.is_array()) && (a.is_int() || a.is_bool())) return repeat(b, a, budget);
  }
  const bool numeric = (a.is_number() || a.is_bool()) && (b.is_number() || b.is_bool());
  if (!numeric)
    return invalid_argument("unsupported operand types for " + std::string(op) + ": " +
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
    if (overflow) return invalid_argument("integer overflow in " + std::string(op));
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

}  // namespace

Result<Value> apply_binary_operator(std::string_view op, const Value& a, const Value& b,
                                    Budget& budget) {
  if (op == "~") {
    std::string text;
    TextSink out(text, budget.max_bytes(), &budget);
    RETURN_IF_ERROR(append_output(a, out));
    RETURN_IF_ERROR(append_output(b, out));
    return Value::string(std::move(text));
  }
  if (op == "==" || op == "!=") {
    ASSIGN_OR_RETURN(const bool equal, values_equal(a, b, budget));
    return Value::boolean(equal == (op == "=="));
  }
  if (op == "in" || op == "not in") {
    bool found = false;
    if (b.is_string()) {
      if (!a.is_string())
        return invalid_argument("'in <string>' needs a string on the left, not a " +
                                std::string(a.type_name()));
      found = SubstringSearch(a.as_string()).find(b.as_string()) != std::string::npos;
    } else if (b.is_array()) {
      for (const Value& item : b.as_array()) {
        ASSIGN_OR_RETURN(found, values_equal(item, a, budget));
        if (found) break;
      }
    } else if (b.is_object()) {
      found = a.is_string() && b.as_object().find(a.as_string()) != nullptr;
    } else if (!b.is_undefined()) {
      return invalid_argument("'in' needs a string, list or dict on the right, not a " +
                              std::string(b.type_name()));
    }
    return Value::boolean(found == (op == "in"));
  }
  if (op == "<" || op == "<=" || op == ">" || op == ">=") return compare(op, a, b);
  return arithmetic(op, a, b, budget);
}

}  // namespace tessera::chat
