#include "core/plugin/options.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <sstream>

#include "core/util/strings.h"

namespace tessera {

std::string_view option_type_name(OptionType type) {
  switch (type) {
    case OptionType::kBool:
      return "bool";
    case OptionType::kInt:
      return "integer";
    case OptionType::kFloat:
      return "float";
    case OptionType::kString:
      return "string";
  }
  return "?";
}

std::string option_value_to_string(const OptionValue& value) {
  struct Visitor {
    std::string operator()(bool b) const { return b ? "true" : "false"; }
    std::string operator()(int64_t i) const { return std::to_string(i); }
    std::string operator()(double d) const {
      std::ostringstream os;
      os << d;
      return os.str();
    }
    std::string operator()(const std::string& s) const { return "\"" + s + "\""; }
  };
  return std::visit(Visitor{}, value);
}

namespace {

bool choice_allowed(const char* choices, std::string_view value) {
  const auto allowed = split(choices, '|');
  return std::find(allowed.begin(), allowed.end(), value) != allowed.end();
}

}  // namespace

Status check_option(const OptionSpec& spec, const OptionValue& value, std::string_view where) {
  const auto type_error = [&](std::string_view got) {
    return invalid_argument(std::string(where) + ": expected " +
                            std::string(option_type_name(spec.type)) + ", got " + std::string(got));
  };
  switch (spec.type) {
    case OptionType::kBool:
      if (!std::holds_alternative<bool>(value)) return type_error(option_value_to_string(value));
      return ok_status();
    case OptionType::kInt:
    case OptionType::kFloat: {
      double number;
      if (const auto* i = std::get_if<int64_t>(&value)) {
        number = static_cast<double>(*i);
      } else if (const auto* d = std::get_if<double>(&value);
                 d && spec.type == OptionType::kFloat) {
        number = *d;
      } else {
        return type_error(option_value_to_string(value));
      }
      if (!(number >= spec.min && number <= spec.max)) {
        std::ostringstream os;
        os << where << ": " << option_value_to_string(value) << " is out of range [" << spec.min
           << ", " << spec.max << "]";
        return out_of_range(os.str());
      }
      return ok_status();
    }
    case OptionType::kString: {
      const auto* s = std::get_if<std::string>(&value);
      if (!s) return type_error(option_value_to_string(value));
      if (spec.choices && !choice_allowed(spec.choices, *s))
        return invalid_argument(std::string(where) + ": \"" + *s + "\" is not one of " +
                                spec.choices);
      return ok_status();
    }
  }
  return internal_error("unknown option type");
}

Result<OptionValue> parse_option(const OptionSpec& spec, std::string_view text,
                                 std::string_view where) {
  const auto bad = [&]() {
    return invalid_argument(std::string(where) + ": cannot read \"" + std::string(text) + "\" as " +
                            std::string(option_type_name(spec.type)));
  };
  OptionValue value;
  switch (spec.type) {
    case OptionType::kBool:
      if (text == "true")
        value = true;
      else if (text == "false")
        value = false;
      else
        return bad();
      break;
    case OptionType::kInt: {
      int64_t i = 0;
      const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), i);
      if (ec != std::errc() || ptr != text.data() + text.size()) return bad();
      value = i;
      break;
    }
    case OptionType::kFloat: {
      // from_chars for double is in libstdc++ 11+, which Debian 12 has.
      double d = 0;
      const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), d);
      if (ec != std::errc() || ptr != text.data() + text.size() || !std::isfinite(d)) return bad();
      value = d;
      break;
    }
    case OptionType::kString:
      if (text.size() >= 2 && text.front() == '"' && text.back() == '"')
        text = text.substr(1, text.size() - 2);
      value = std::string(text);
      break;
  }
  RETURN_IF_ERROR(check_option(spec, value, where));
  return value;
}

const OptionValue& OptionValues::at(std::string_view name) const {
  const auto it = values_.find(name);
  TESSERA_CHECK(it != values_.end(), "option not set: " + std::string(name));
  return it->second;
}

bool OptionValues::get_bool(std::string_view name) const {
  return std::get<bool>(at(name));
}
int64_t OptionValues::get_int(std::string_view name) const {
  return std::get<int64_t>(at(name));
}
double OptionValues::get_float(std::string_view name) const {
  const auto& v = at(name);
  if (const auto* i = std::get_if<int64_t>(&v)) return static_cast<double>(*i);
  return std::get<double>(v);
}
const std::string& OptionValues::get_string(std::string_view name) const {
  return std::get<std::string>(at(name));
}

}  // namespace tessera
