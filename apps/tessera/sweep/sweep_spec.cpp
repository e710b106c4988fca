#include "apps/tessera/sweep/sweep_spec.h"

#include <algorithm>
#include <charconv>
#include <iterator>

#include "core/config/config_schema.h"
#include "core/io/file_lookup.h"
#include "core/plugin/plugin_kinds.h"
#include "core/util/strings.h"
#include "core/util/suggest.h"

namespace tessera::sweep {
namespace {

struct IntSetting {
  const char* name;
  int64_t SweepSettings::*field;
  int64_t min;
  int64_t max;
};

constexpr IntSetting kIntSettings[] = {
    {"max_tokens", &SweepSettings::max_tokens, 2, 1 << 24},
    {"recall_length", &SweepSettings::recall_length, 1, 1 << 16},
    {"recall_filler", &SweepSettings::recall_filler, 0, 1 << 24},
    {"recall_trials", &SweepSettings::recall_trials, 1, 1 << 16},
    {"speed_tokens", &SweepSettings::speed_tokens, 1, 1 << 20},
    {"seed", &SweepSettings::seed, 0, INT64_MAX},
};

const IntSetting* find_int_setting(std::string_view name) {
  for (const IntSetting& s : kIntSettings)
    if (name == s.name) return &s;
  return nullptr;
}

std::vector<std::string> sweep_keys() {
  std::vector<std::string> keys = {"tasks", "text", "recall_source"};
  for (const IntSetting& s : kIntSettings) keys.emplace_back(s.name);
  return keys;
}

std::string where(const ConfigEntry& entry) {
  return entry.key_where + ": " + entry.key();
}

// A scalar as --set text and, for numbers, its value.
std::string value_text(const OptionValue& value, std::optional<double>& number) {
  if (const auto* i = std::get_if<int64_t>(&value)) {
    number = static_cast<double>(*i);
    return std::to_string(*i);
  }
  if (const auto* d = std::get_if<double>(&value)) {
    number = *d;
    return shortest_decimal(*d);
  }
  if (const auto* b = std::get_if<bool>(&value)) return *b ? "true" : "false";
  return std::get<std::string>(value);
}

Status set_int(const IntSetting& s, const OptionValue& value, SweepSettings& settings,
               const std::string& at) {
  const auto* i = std::get_if<int64_t>(&value);
  if (i == nullptr) return invalid_argument(at + ": expected an integer");
  if (*i < s.min || *i > s.max)
    return out_of_range(at + ": " + std::to_string(*i) + " is out of range; allowed: [" +
                        std::to_string(s.min) + ", " + std::to_string(s.max) + "]");
  settings.*s.field = *i;
  return ok_status();
}

Status set_recall_source(const std::string& source, SweepSettings& settings,
                         const std::string& at) {
  if (source != "text" && source != "random")
    return invalid_argument(at + ": \"" + source +
                            "\" is not a recall source; allowed: text, random");
  settings.recall_source = source;
  return ok_status();
}

Status read_setting(const ConfigEntry& entry, const Config& file, SweepSettings& settings) {
  if (entry.name == "tasks") {
    if (entry.form != ConfigEntry::Form::kList || entry.list.empty())
      return invalid_argument(where(entry) +
                              ": expected a list of tasks such as [\"perplexity\"]; " +
                              "tasks: " + join({std::begin(kTasks), std::end(kTasks)}));
    const std::vector<std::string> known(std::begin(kTasks), std::end(kTasks));
    for (const std::string& task : entry.list) {
      if (std::find(known.begin(), known.end(), task) == known.end())
        return invalid_argument(where(entry) + ": unknown task '" + task + "'" +
                                did_you_mean_then(task, known) + "tasks: " + join(known));
    }
    settings.tasks = entry.list;
    return ok_status();
  }
  if (entry.name == "text") {
    const auto* name = std::get_if<std::string>(&entry.value);
    if (entry.form != ConfigEntry::Form::kValue || name == nullptr)
      return invalid_argument(where(entry) + ": expected a file name");
    ASSIGN_OR_RETURN(settings.text, locate_data_file(*name, file.directory()));
    return ok_status();
  }
  if (entry.name == "recall_source") {
    const auto* source = std::get_if<std::string>(&entry.value);
    if (entry.form != ConfigEntry::Form::kValue || source == nullptr)
      return invalid_argument(where(entry) + ": expected \"text\" or \"random\"");
    return set_recall_source(*source, settings, where(entry));
  }
  if (const IntSetting* s = find_int_setting(entry.name)) {
    if (entry.form != ConfigEntry::Form::kValue)
      return invalid_argument(where(entry) + ": expected an integer");
    return set_int(*s, entry.value, settings, where(entry));
  }
  return invalid_argument(entry.key_where + ": unknown key 'sweep." + entry.name + "'" +
                          did_you_mean_then(entry.name, sweep_keys()) +
                          "keys of [sweep]: " + join(sweep_keys()));
}

// Whether `key` (section.name) is the key that picks a plugin of its section.
bool picks_plugin(const std::string& key) {
  return std::any_of(std::begin(kPluginKinds), std::end(kPluginKinds),
                     [&](const PluginKind& kind) { return kind.name_key == key; });
}

Result<Axis> read_axis(const ConfigEntry& entry) {
  Axis axis;
  axis.key = entry.name;
  const auto [section, name] = [&] {
    const auto dot = axis.key.rfind('.');
    return dot == std::string::npos ? std::pair<std::string, std::string>{axis.key, ""}
                                    : std::pair<std::string, std::string>{axis.key.substr(0, dot),
                                                                          axis.key.substr(dot + 1)};
  }();
  const std::string at = entry.key_where + ": axis \"" + axis.key + "\"";
  if (!entry.item_tables.empty()) {
    // A section axis: each value is a table of that section's keys.
    if (!is_config_section(axis.key))
      return invalid_argument(
          at + ": values that are tables set keys of a section, and \"" + axis.key +
          "\" is not one; sections: " + join({config_sections().begin(), config_sections().end()}));
    for (const auto& table : entry.item_tables) {
      AxisValue value;
      // Labelled "lattice E8 q=10" or "dlm draft_model=x.gguf": the plugin's
      // name bare (the key that picks it: plugin, or [decode]'s proposer),
      // the other keys as set.
      std::string plugin, rest;
      std::vector<std::pair<std::string, std::string>> options;
      for (const auto& [key, v] : table) {
        std::optional<double> unused;
        const std::string text = value_text(v, unused);
        value.sets.emplace_back(axis.key + "." + key, text);
        if (picks_plugin(axis.key + "." + key))
          plugin += (plugin.empty() ? "" : " ") + text;
        else
          options.emplace_back(key, text);
      }
      // An option named like its plugin (lattice = "E8") reads as its value.
      for (const auto& [key, text] : options)
        rest += (rest.empty() ? "" : " ") + (key == plugin ? text : key + "=" + text);
      value.label = plugin.empty() ? rest : rest.empty() ? plugin : plugin + " " + rest;
      axis.values.push_back(std::move(value));
    }
    return axis;
  }
  if (entry.items.empty())
    return invalid_argument(at +
                            ": expected a list of values, such as [16, 64], or of tables, "
                            "such as [{ plugin = \"int8\" }]");
  if (section == "sweep") {
    if (!find_int_setting(name) || name == "max_tokens")
      return invalid_argument(at +
                              ": the sweep keys that can be axes are recall_length, "
                              "recall_filler, speed_tokens and seed");
    for (const OptionValue& v : entry.items)
      if (!std::holds_alternative<int64_t>(v)) return invalid_argument(at + ": expected integers");
  } else if (name.empty() || !is_config_section(section)) {
    return invalid_argument(at + ": expected section.key with a section of a config (" +
                            join({config_sections().begin(), config_sections().end()}) +
                            ") or sweep");
  }
  for (const OptionValue& v : entry.items) {
    AxisValue value;
    value.label = value_text(v, value.number);
    value.sets.emplace_back(axis.key, value.label);
    axis.values.push_back(std::move(value));
  }
  return axis;
}

// An item of a comma-separated list as TOML: a number or boolean as typed,
// anything else a quoted string ("ngram", "E8").
std::string toml_item(std::string_view item) {
  if (auto parsed = Config::parse("v = " + std::string(item) + "\n", "item"); parsed.ok()) {
    const auto& entries = parsed->entries();
    if (entries.size() == 1 && entries.front().form == ConfigEntry::Form::kValue &&
        !std::holds_alternative<std::string>(entries.front().value))
      return std::string(item);
  }
  std::string quoted = "\"";
  for (const char c : item) {
    if (c == '"' || c == '\\') quoted += '\\';
    quoted += c;
  }
  return quoted + "\"";
}

// --set sweep.axes.KEY=VALUES: the file's axis KEY takes VALUES instead of its
// own, read as the file's are (a TOML array) or as a comma-separated list.
Status override_axis(SweepSpec& spec, const std::string& key, std::string_view text,
                     const std::string& at) {
  const auto axis =
      std::find_if(spec.axes.begin(), spec.axes.end(), [&](const Axis& a) { return a.key == key; });
  if (axis == spec.axes.end()) {
    std::vector<std::string> keys;
    for (const Axis& a : spec.axes) keys.push_back(a.key);
    return invalid_argument(
        at + ": the sweep file has no axis \"" + key + "\"" +
        (keys.empty() ? "; it has no [sweep.axes] at all"
                      : did_you_mean_then(key, keys) + "its axes: " + join(keys)) +
        " (--set sweep.axes.KEY=... gives one of the file's axes other values; add an axis "
        "in the file; --set KEY=VALUE sets a key for every point)");
  }
  std::string array(text);
  if (array.empty() || array.front() != '[') {
    array = "[";
    for (const std::string& item : split(text, ',')) {
      const std::string_view value = trim(item);
      if (value.empty()) continue;
      array += (array.size() > 1 ? ", " : "") + toml_item(value);
    }
    array += "]";
  }
  auto parsed = Config::parse("[sweep.axes]\n\"" + key + "\" = " + array + "\n", at);
  if (!parsed.ok()) {
    const std::string& message = parsed.status().message();
    const auto syntax = message.find("TOML syntax error");
    return invalid_argument(
        at + ": expected values such as [64, 128] or 64,128" +
        (syntax == std::string::npos ? "" : " (" + message.substr(syntax) + ")"));
  }
  ConfigEntry entry = parsed->entries().front();
  entry.key_where = at;
  entry.value_where = at;
  ASSIGN_OR_RETURN(*axis, read_axis(entry));
  return ok_status();
}

}  // namespace

bool Axis::numeric() const {
  return std::all_of(values.begin(), values.end(),
                     [](const AxisValue& v) { return v.number.has_value(); });
}

int64_t SweepSpec::points() const {
  int64_t n = 1;
  for (const Axis& axis : axes) n *= static_cast<int64_t>(axis.values.size());
  return n;
}

std::vector<std::size_t> SweepSpec::choice(int64_t index) const {
  std::vector<std::size_t> out(axes.size());
  for (std::size_t a = axes.size(); a-- > 0;) {
    const auto size = static_cast<int64_t>(axes[a].values.size());
    out[a] = static_cast<std::size_t>(index % size);
    index /= size;
  }
  return out;
}

Result<SweepSpec> read_sweep_spec(const Config& file) {
  SweepSettings settings;
  std::vector<Axis> axes;
  bool has_sweep = false;
  for (const ConfigEntry& entry : file.entries()) {
    if (entry.section == "sweep") {
      has_sweep = true;
      RETURN_IF_ERROR(read_setting(entry, file, settings));
    } else if (entry.section == "sweep.axes") {
      has_sweep = true;
      ASSIGN_OR_RETURN(Axis axis, read_axis(entry));
      axes.push_back(std::move(axis));
    } else if (entry.section.rfind("sweep.", 0) == 0) {
      return invalid_argument(entry.key_where + ": unknown section [" + entry.section +
                              "]; a sweep has [sweep] and [sweep.axes]");
    }
  }
  if (!has_sweep)
    return invalid_argument(file.source() +
                            " has no [sweep] section; add one with tasks = [...] "
                            "(see tessera sweep --help)");
  if (settings.tasks.empty())
    return invalid_argument(file.source() + ": [sweep] needs tasks = [...], from: " +
                            join({std::begin(kTasks), std::end(kTasks)}));
  if (settings.text.empty())
    return invalid_argument(file.source() +
                            ": [sweep] needs text = \"file.txt\", the text the "
                            "tasks read");
  return SweepSpec{std::move(settings), std::move(axes), file.without_section("sweep")};
}

Status apply_sweep_override(SweepSpec& spec, std::string_view assignment) {
  const std::string at = "--set " + std::string(assignment);
  const auto eq = assignment.find('=');
  const std::string_view prefix = "sweep.";
  if (eq == std::string_view::npos || assignment.substr(0, prefix.size()) != prefix)
    return invalid_argument(at + ": expected sweep.key=value, e.g. --set sweep.max_tokens=128");
  const std::string name(trim(assignment.substr(prefix.size(), eq - prefix.size())));
  const std::string text(trim(assignment.substr(eq + 1)));
  if (name.rfind("axes.", 0) == 0) return override_axis(spec, name.substr(5), text, at);
  if (name == "text") {
    ASSIGN_OR_RETURN(spec.settings.text, locate_data_file(text, "."));
    return ok_status();
  }
  if (name == "recall_source") return set_recall_source(text, spec.settings, at);
  if (name == "tasks") {
    const std::vector<std::string> known(std::begin(kTasks), std::end(kTasks));
    std::vector<std::string> tasks;
    for (const std::string& task : split(text, ',')) {
      const std::string t(trim(task));
      if (std::find(known.begin(), known.end(), t) == known.end())
        return invalid_argument(at + ": unknown task '" + t + "'" + did_you_mean_then(t, known) +
                                "tasks: " + join(known));
      tasks.push_back(t);
    }
    if (tasks.empty()) return invalid_argument(at + ": expected tasks such as perplexity,memory");
    spec.settings.tasks = std::move(tasks);
    return ok_status();
  }
  const IntSetting* s = find_int_setting(name);
  if (s == nullptr)
    return invalid_argument(at + ": unknown key 'sweep." + name + "'" +
                            did_you_mean_then(name, sweep_keys()) +
                            "keys of [sweep]: " + join(sweep_keys()));
  int64_t number = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), number);
  if (ec != std::errc() || end != text.data() + text.size())
    return invalid_argument(at + ": expected an integer");
  return set_int(*s, number, spec.settings, at);
}

Result<PointSetup> point_setup(const SweepSpec& spec, const std::vector<std::size_t>& choice) {
  PointSetup setup{spec.settings, {}, {}};
  for (std::size_t a = 0; a < spec.axes.size(); ++a) {
    const Axis& axis = spec.axes[a];
    const AxisValue& value = axis.values[choice[a]];
    setup.labels.push_back(value.label);
    if (axis.key.rfind("sweep.", 0) == 0) {
      const IntSetting* s = find_int_setting(axis.key.substr(6));
      int64_t number = 0;
      std::from_chars(value.label.data(), value.label.data() + value.label.size(), number);
      RETURN_IF_ERROR(set_int(*s, number, setup.settings, "axis " + axis.key));
      continue;
    }
    setup.sets.insert(setup.sets.end(), value.sets.begin(), value.sets.end());
  }
  return setup;
}

}  // namespace tessera::sweep
