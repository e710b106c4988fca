// A sweep file: a normal config plus
//   [sweep]
//   tasks = ["perplexity", "fidelity", "recall", "memory", "speed", "speculative"]
//   text = "tinystories_train_head.txt"   # looked up like models; ../shared/data too
//   max_tokens = 512                      # tokens of the text each task reads
//   recall_source = "text"                # recall: a passage of the text, or "random" tokens
//   recall_length = 16                    # recall: tokens to remember
//   recall_filler = 64                    # recall: text between its two copies
//   speed_tokens = 64                     # speed, speculative: tokens generated and timed
//   recall_trials = 8                     # recall: passages averaged
//   seed = 0                              # recall: where the passages start
//   [sweep.axes]
//   "cache.window" = [16, 64]             # any key, one value per point
//   "cache.codec" = [{ plugin = "identity" }, { plugin = "lattice", q = 10 }]
//                                         # a section: each value sets several keys
//   "sweep.recall_filler" = [0, 64, 256]  # the sweep's own keys are axes too
// The grid is the cartesian product of the axes, in file order (the last
// axis varies fastest).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/config/config.h"
#include "core/status/status.h"

namespace tessera::sweep {

inline constexpr const char* kTasks[] = {"perplexity", "fidelity", "recall",
                                         "memory",     "speed",    "speculative"};

// One value of an axis: the key = value settings it makes (one for a key
// axis, several for a section axis) and how it reads in tables and plots.
struct AxisValue {
  std::string label;                                      // "16", "plugin=lattice q=10"
  std::vector<std::pair<std::string, std::string>> sets;  // full key -> value as --set text
  std::optional<double> number;                           // for a numeric plot axis
};

struct Axis {
  std::string key;  // "cache.window", or a section: "cache.codec"
  std::vector<AxisValue> values;
  bool numeric() const;
};

struct SweepSettings {
  std::vector<std::string> tasks;
  std::string text;                    // the file, located
  std::string recall_source = "text";  // "text" | "random"
  int64_t max_tokens = 512;
  int64_t recall_length = 16;
  int64_t recall_filler = 64;
  int64_t recall_trials = 8;
  int64_t speed_tokens = 64;
  int64_t seed = 0;
};

struct SweepSpec {
  SweepSettings settings;
  std::vector<Axis> axes;
  Config base;  // the file without [sweep]

  int64_t points() const;
  // The point's choice of value per axis (index-th point of the grid).
  std::vector<std::size_t> choice(int64_t index) const;
};

// Reads [sweep] and [sweep.axes] from a loaded sweep file. Errors name the
// file's position, the key and what is allowed.
Result<SweepSpec> read_sweep_spec(const Config& file);

// "--set sweep.key=value" for the sweep's own keys: the integers, text (looked
// up from the working directory) and tasks (comma-separated). And
// "--set sweep.axes.KEY=VALUES": the file's axis KEY takes VALUES instead of
// its own, a TOML array as in the file ([64, 128], [{ plugin = "int8" }]) or
// a comma-separated list (64,128; ngram,ar_draft: words read as strings).
Status apply_sweep_override(SweepSpec& spec, std::string_view assignment);

// The point's settings: `settings` with its sweep.* axes applied, and the
// key = value pairs for the config (in axis order).
struct PointSetup {
  SweepSettings settings;
  std::vector<std::pair<std::string, std::string>> sets;
  std::vector<std::string> labels;  // one per axis
};
Result<PointSetup> point_setup(const SweepSpec& spec, const std::vector<std::size_t>& choice);

}  // namespace tessera::sweep
