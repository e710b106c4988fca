#include "core/plugin/options.h"

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
    std::string operator()(double d) const { return shortest_decimal(d); }
    std::string operator()(const std::string& s) const { return "\"" + s + "\""; }
  };
  return std::visit(Visitor{}, value);
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
