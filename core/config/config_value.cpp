#include "core/config/config_value.h"

#include <charconv>
#include <cmath>

#include "core/config/config_schema.h"
#include "core/util/path_list.h"
#include "core/util/strings.h"
#include "core/util/suggest.h"

namespace tessera {

namespace {

std::string prefix(const ConfigEntry& entry) {
  return entry.value_where + ": " + entry.key();
}

Status check_limits(const OptionSpec& spec, bool min_exclusive, const OptionValue& value,
                    const ConfigEntry& entry) {
  if (spec.type == OptionType::kInt || spec.type == OptionType::kFloat) {
    const double x = spec.type == OptionType::kInt ? static_cast<double>(std::get<int64_t>(value))
                                                   : std::get<double>(value);
    const bool above_min = min_exclusive ? x > spec.min : x >= spec.min;
    if (!above_min || !(x <= spec.max))
      return out_of_range(prefix(entry) + ": " + option_value_to_string(value) +
                          " is out of range; allowed: " + allowed_values_text(spec, min_exclusive));
  }
  // "@kind": a plugin name, checked against the registry by the engine.
  if (spec.type == OptionType::kString && spec.choices && spec.choices[0] != '@') {
    const auto& s = std::get<std::string>(value);
    const auto choices = split(spec.choices, '|');
    for (const auto& c : choices)
      if (c == s) return ok_status();
    return invalid_argument(prefix(entry) + ": \"" + s + "\" is not allowed" +
                            did_you_mean_then(s, choices) + "allowed: " + join(choices));
  }
  return ok_status();
}

}  // namespace

std::string ConfigEntry::display() const {
  switch (form) {
    case Form::kValue:
      return option_value_to_string(value);
    case Form::kList: {
      std::string out = "[";
      for (std::size_t i = 0; i < list.size(); ++i) out += (i ? ", \"" : "\"") + list[i] + "\"";
      return out + "]";
    }
    case Form::kText:
      return "\"" + text + "\"";
    case Form::kOther:
      return text;
  }
  return text;
}

std::optional<OptionValue> value_from_text(const OptionSpec& spec, std::string_view text) {
  const char* begin = text.data();
  const char* end = text.data() + text.size();
  switch (spec.type) {
    case OptionType::kBool:
      if (text == "true") return true;
      if (text == "false") return false;
      return std::nullopt;
    case OptionType::kInt: {
      int64_t i = 0;
      const auto [ptr, ec] = std::from_chars(begin, end, i);
      if (text.empty() || ec != std::errc() || ptr != end) return std::nullopt;
      return i;
    }
    case OptionType::kFloat: {
      double d = 0;
      const auto [ptr, ec] = std::from_chars(begin, end, d);
      if (text.empty() || ec != std::errc() || ptr != end || !std::isfinite(d)) return std::nullopt;
      return d;
    }
    case OptionType::kString:
      if (text.size() >= 2 && text.front() == '"' && text.back() == '"')
        text = text.substr(1, text.size() - 2);
      return std::string(text);
  }
  return std::nullopt;
}

Result<OptionValue> check_entry(const OptionSpec& spec, bool min_exclusive,
                                const ConfigEntry& entry) {
  const auto type_error = [&] {
    return invalid_argument(prefix(entry) + ": expected " +
                            std::string(option_type_name(spec.type)) + ", got " + entry.display());
  };
  std::optional<OptionValue> value;
  if (entry.form == ConfigEntry::Form::kText) {
    value = value_from_text(spec, entry.text);
  } else if (entry.form == ConfigEntry::Form::kValue) {
    value = entry.value;
  }
  if (!value) return type_error();
  switch (spec.type) {
    case OptionType::kBool:
      if (!std::holds_alternative<bool>(*value)) return type_error();
      break;
    case OptionType::kInt:
      if (!std::holds_alternative<int64_t>(*value)) return type_error();
      break;
    case OptionType::kFloat:
      // Integers are fine where a float is expected (`temperature = 1`).
      if (const auto* i = std::get_if<int64_t>(&*value)) value = static_cast<double>(*i);
      if (!std::holds_alternative<double>(*value)) return type_error();
      break;
    case OptionType::kString:
      if (!std::holds_alternative<std::string>(*value)) return type_error();
      break;
  }
  RETURN_IF_ERROR(check_limits(spec, min_exclusive, *value, entry));
  return *value;
}

Result<std::vector<std::string>> check_list_entry(const ConfigEntry& entry) {
  switch (entry.form) {
    case ConfigEntry::Form::kList:
      return entry.list;
    case ConfigEntry::Form::kText:
      return split_path_list(entry.text);
    default:
      return invalid_argument(prefix(entry) + ": expected a list of strings such as " +
                              "[\"dir1\", \"dir2\"], got " + entry.display());
  }
}

}  // namespace tessera
