#include "apps/tessera/sweep/plot_ticks.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace tessera::sweep {
namespace {

// Tolerance for a tick exactly at an end of the axis.
constexpr double kEdge = 1e-9;
// Plain decimals for values of this size; m×10^e beyond.
constexpr double kSmallestPlain = 1e-3;
constexpr double kLargestPlain = 1e5;
constexpr int kMaxMantissaDecimals = 3;
constexpr int kMaxPlainDecimals = 6;

std::string fixed(double value, int decimals) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", decimals, value);
  // "-0" for a value a hair below zero.
  std::string out = text;
  if (out.find_first_not_of("-0.") == std::string::npos && out.front() == '-') out.erase(0, 1);
  return out;
}

// The fewest decimals (up to `most`) that write `value` exactly.
int decimals_needed(double value, int most) {
  for (int d = 0; d < most; ++d) {
    const double scaled = value * std::pow(10.0, d);
    if (std::abs(scaled - std::round(scaled)) < 1e-6 * std::max(1.0, std::abs(scaled))) return d;
  }
  return most;
}

// Ticks at `values` (log10 positions when `log`), labelled together.
std::vector<Tick> ticks_at(const std::vector<double>& values, bool log, int decimals) {
  const std::vector<std::string> labels = tick_labels(values, decimals);
  std::vector<Tick> ticks;
  for (std::size_t i = 0; i < values.size(); ++i)
    ticks.push_back({log ? std::log10(values[i]) : values[i], labels[i]});
  return ticks;
}

// Every m * 10^e in [log_min, log_max] for m in `mantissas`, ascending.
std::vector<double> multiples_of_powers(double log_min, double log_max,
                                        const std::vector<int>& mantissas, int exponent_step) {
  std::vector<double> values;
  const int first = static_cast<int>(std::floor(log_min));
  const int last = static_cast<int>(std::ceil(log_max));
  for (int e = first; e <= last; ++e) {
    if (e % exponent_step != 0) continue;
    for (const int m : mantissas) {
      const double position = e + std::log10(static_cast<double>(m));
      if (position >= log_min - kEdge && position <= log_max + kEdge)
        values.push_back(m * std::pow(10.0, e));
    }
  }
  return values;
}

// A step of 1, 2 or 5 times a power of ten giving about `count` steps over
// [low, high].
double nice_step(double low, double high, double count) {
  const double raw_step = (high - low) / count;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw_step)));
  const double fraction = raw_step / magnitude;
  return magnitude * (fraction < 1.5 ? 1 : fraction < 3.5 ? 2 : fraction < 7.5 ? 5 : 10);
}

// The multiples of `step` in [low, high].
std::vector<double> multiples_of(double step, double low, double high) {
  std::vector<double> values;
  const double slack = kEdge * std::max(std::abs(low), std::abs(high));
  for (double k = std::ceil((low - slack) / step); k * step <= high + slack; ++k)
    values.push_back(k * step);
  return values;
}

int step_decimals(double step) {
  return std::max(0, -static_cast<int>(std::floor(std::log10(step) + kEdge)));
}

}  // namespace

std::vector<std::string> tick_labels(const std::vector<double>& values, int decimals) {
  const bool plain = std::all_of(values.begin(), values.end(), [](double v) {
    return v == 0 || (std::abs(v) >= kSmallestPlain * (1 - kEdge) && std::abs(v) < kLargestPlain);
  });
  std::vector<std::string> labels;
  if (plain) {
    for (const double v : values)
      labels.push_back(fixed(v, decimals >= 0 ? decimals : decimals_needed(v, kMaxPlainDecimals)));
    return labels;
  }
  // m×10^e: the mantissas with one count of decimals.
  std::vector<double> mantissas(values.size(), 0.0);
  std::vector<int> exponents(values.size(), 0);
  int mantissa_decimals = 0;
  bool all_ones = true;
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (values[i] == 0) continue;
    exponents[i] = static_cast<int>(std::floor(std::log10(std::abs(values[i])) + kEdge));
    mantissas[i] = values[i] / std::pow(10.0, exponents[i]);
    mantissa_decimals =
        std::max(mantissa_decimals, decimals_needed(mantissas[i], kMaxMantissaDecimals));
  }
  for (std::size_t i = 0; i < values.size(); ++i)
    if (values[i] != 0 && fixed(mantissas[i], mantissa_decimals) != "1") all_ones = false;
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (values[i] == 0) {
      labels.push_back("0");
      continue;
    }
    const std::string power = "10#u" + std::to_string(exponents[i]) + "#d";
    labels.push_back(all_ones ? power : fixed(mantissas[i], mantissa_decimals) + "\u00D7" + power);
  }
  return labels;
}

std::vector<Tick> log_axis_ticks(double log_min, double log_max) {
  std::vector<double> powers = multiples_of_powers(log_min, log_max, {1}, 1);
  if (powers.size() > 10) {
    const int step = static_cast<int>((powers.size() + 7) / 8);
    return ticks_at(multiples_of_powers(log_min, log_max, {1}, step), true, -1);
  }
  if (powers.size() >= 3) return ticks_at(powers, true, -1);
  std::vector<double> values = multiples_of_powers(log_min, log_max, {1, 2, 5}, 1);
  if (values.size() >= 3) return ticks_at(values, true, -1);
  // Within one decade: evenly spaced, every label with the step's decimals.
  const double low = std::pow(10.0, log_min), high = std::pow(10.0, log_max);
  const double step = nice_step(low, high, 5);
  values = multiples_of(step, low, high);
  std::erase_if(values, [](double v) { return v <= 0; });
  return ticks_at(values, true, step_decimals(step));
}

std::vector<Tick> linear_axis_ticks(double min, double max) {
  if (!(max > min)) return ticks_at({min}, false, -1);
  double step = nice_step(min, max, 5);
  std::vector<double> values = multiples_of(step, min, max);
  if (values.size() < 4) {
    step = nice_step(min, max, 8);
    values = multiples_of(step, min, max);
  }
  for (double& v : values)
    if (std::abs(v) < step * kEdge) v = 0;  // not 1e-17 for the zero tick
  return ticks_at(values, false, step_decimals(step));
}

}  // namespace tessera::sweep
