#include "core/config/toml_reader.h"

#include <toml++/toml.h>
#include <algorithm>
#include <sstream>
#include <tuple>

#include "core/config/toml_nesting.h"

namespace tessera {

namespace {

struct Position {
  uint32_t line = 0;
  uint32_t column = 0;
};

Position position_of(const toml::source_region& region) {
  return {region.begin.line, region.begin.column};
}

std::string where(const std::string& source, Position p) {
  return source + ":" + std::to_string(p.line) + ":" + std::to_string(p.column);
}

// How a node reads in TOML, for "got ..." in messages.
std::string node_text(const toml::node& node) {
  std::ostringstream os;
  node.visit([&](const auto& n) { os << n; });
  return os.str();
}

class Reader {
 public:
  explicit Reader(const std::string& source) : source_(source) {}

  void read_table(const toml::table& table, const std::string& section) {
    for (auto&& [key, node] : table) {
      const std::string name(key.str());
      const Position key_pos = position_of(key.source());
      const Position value_pos = position_of(node.source());
      if (const auto* sub = node.as_table()) {
        const std::string path = section.empty() ? name : section + "." + name;
        add_table(path, value_pos);
        read_table(*sub, path);
        continue;
      }
      Located entry;
      entry.entry.section = section;
      entry.entry.name = name;
      entry.entry.key_where = where(source_, key_pos);
      entry.entry.value_where = where(source_, value_pos);
      entry.position = key_pos;
      convert(node, entry.entry);
      entries_.push_back(std::move(entry));
    }
  }

  ConfigDocument finish() {
    // toml++ tables are sorted by key; messages should follow the file.
    const auto by_position = [](const auto& a, const auto& b) {
      return std::tie(a.position.line, a.position.column) <
             std::tie(b.position.line, b.position.column);
    };
    std::stable_sort(tables_.begin(), tables_.end(), by_position);
    std::stable_sort(entries_.begin(), entries_.end(), by_position);
    ConfigDocument doc;
    for (auto& t : tables_) doc.tables.push_back(std::move(t.table));
    for (auto& e : entries_) doc.entries.push_back(std::move(e.entry));
    return doc;
  }

 private:
  struct LocatedTable {
    ConfigTable table;
    Position position;
  };
  struct Located {
    ConfigEntry entry;
    Position position;
  };

  void add_table(const std::string& path, Position p) {
    tables_.push_back({ConfigTable{path, where(source_, p)}, p});
  }

  // A scalar's value; false for anything else (array, table, date).
  static bool scalar(const toml::node& node, OptionValue& value) {
    if (const auto* s = node.as_string()) {
      value = s->get();
    } else if (const auto* i = node.as_integer()) {
      value = i->get();
    } else if (const auto* f = node.as_floating_point()) {
      value = f->get();
    } else if (const auto* b = node.as_boolean()) {
      value = b->get();
    } else {
      return false;
    }
    return true;
  }

  // Keeps an array's scalar elements, or its inline tables of scalars.
  static void keep_items(const toml::array& array, ConfigEntry& entry) {
    for (const auto& item : array) {
      OptionValue value;
      if (scalar(item, value)) {
        entry.items.push_back(std::move(value));
      } else if (const auto* table = item.as_table()) {
        std::vector<std::pair<std::string, OptionValue>> settings;
        for (auto&& [key, node] : *table) {
          if (!scalar(node, value)) return;  // nested deeper: not a list of settings
          settings.emplace_back(std::string(key.str()), std::move(value));
        }
        entry.item_tables.push_back(std::move(settings));
      } else {
        return;
      }
    }
    if (!entry.items.empty() && !entry.item_tables.empty()) {
      entry.items.clear();  // a mix of both is neither
      entry.item_tables.clear();
    }
  }

  static void convert(const toml::node& node, ConfigEntry& entry) {
    using Form = ConfigEntry::Form;
    if (scalar(node, entry.value)) return;
    if (const auto* array = node.as_array()) {
      keep_items(*array, entry);
      if (array->is_homogeneous<std::string>() || array->empty()) {
        entry.form = Form::kList;
        for (const auto& item : *array) entry.list.push_back(item.as_string()->get());
        return;
      }
    }
    entry.form = Form::kOther;
    entry.text = node_text(node);
  }

  const std::string& source_;
  std::vector<LocatedTable> tables_;
  std::vector<Located> entries_;
};

// toml++ reports a string left open as the line end it ran into ("unescaped
// control characters ... prohibited") or as the end of the file: say what the
// reader most likely did.
std::string unclosed_string_hint(std::string_view text, std::string_view description, Position p) {
  if (description.find("string") == std::string_view::npos) return "";
  if (description.find("end-of-file") != std::string_view::npos)
    return "; the string is probably not closed: add its closing quote";
  // The line toml++ stopped on, and whether it stopped at its end.
  std::size_t begin = 0;
  for (uint32_t line = 1; line < p.line && begin != std::string_view::npos; ++line) {
    begin = text.find('\n', begin);
    if (begin != std::string_view::npos) ++begin;
  }
  if (begin == std::string_view::npos || p.column == 0) return "";
  std::string_view line = text.substr(begin, text.find('\n', begin) - begin);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (p.column <= line.size()) return "";
  return "; the string is probably not closed: add its closing quote on line " +
         std::to_string(p.line) + " (only a \"\"\"multi-line\"\"\" string spans lines)";
}

}  // namespace

Result<ConfigDocument> read_toml(std::string_view text, const std::string& source_name) {
  // toml++ recurses once per nesting level; refuse deep text before it sees it.
  RETURN_IF_ERROR(check_toml_nesting(text, source_name));
  toml::table root;
  try {
    root = toml::parse(text, std::string_view(source_name));
  } catch (const toml::parse_error& error) {
    const Position p = position_of(error.source());
    return invalid_argument(where(source_name, p) +
                            ": TOML syntax error: " + std::string(error.description()) +
                            unclosed_string_hint(text, error.description(), p));
  }
  Reader reader(source_name);
  reader.read_table(root, "");
  return reader.finish();
}

}  // namespace tessera
