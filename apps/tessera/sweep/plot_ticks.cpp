#include "apps/tessera/sweep/plot_ticks.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace tessera::sweep {
namespace {

// Tolerance for a tick exactly at an end of the axis.
constexpr double kEdge = 1e-9;

// Every m * 10^e in [log_min, log_max] for m in `mantissas`, ascending.
std::vector<Tick> multiples_of_powers(double log_min, double log_max,
                                      const std::vector<int>& mantissas, int exponent_step) {
  std::vector<Tick> ticks;
  const int first = static_cast<int>(std::floor(log_min));
  const int last = static_cast<int>(std::ceil(log_max));
  for (int e = first; e <= last; ++e) {
    if (e % exponent_step != 0) continue;
    for (const int m : mantissas) {
      const double position = e + std::log10(static_cast<double>(m));
      if (position >= log_min - kEdge && position <= log_max + kEdge)
        ticks.push_back({position, log_tick_label(m, e)});
    }
  }
  return ticks;
}

// Within a decade: values evenly spaced by 1, 2 or 5 times a power of ten,
// about five of them.
std::vector<Tick> evenly_spaced(double log_min, double log_max) {
  const double low = std::pow(10.0, log_min), high = std::pow(10.0, log_max);
  const double raw_step = (high - low) / 5;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw_step)));
  const double fraction = raw_step / magnitude;
  const double step = magnitude * (fraction < 1.5   ? 1
                                   : fraction < 3.5 ? 2
                                   : fraction < 7.5 ? 5
                                                    : 10);
  const int decimals = std::max(0, -static_cast<int>(std::floor(std::log10(step) + kEdge)));
  std::vector<Tick> ticks;
  for (double k = std::ceil(low / step - kEdge); k * step <= high * (1 + kEdge); ++k) {
    char text[64];
    std::snprintf(text, sizeof text, "%.*f", decimals, k * step);
    ticks.push_back({std::log10(k * step), text});
  }
  return ticks;
}

}  // namespace

std::string log_tick_label(int mantissa, int exponent) {
  const std::string m = std::to_string(mantissa);
  if (exponent >= 0 && exponent <= 4) return m + std::string(exponent, '0');
  if (exponent < 0 && exponent >= -3) return "0." + std::string(-exponent - 1, '0') + m;
  const std::string power = "10#u" + std::to_string(exponent) + "#d";
  return mantissa == 1 ? power : m + "\u00D7" + power;
}

std::vector<Tick> log_axis_ticks(double log_min, double log_max) {
  std::vector<Tick> powers = multiples_of_powers(log_min, log_max, {1}, 1);
  if (powers.size() > 10) {
    const int step = static_cast<int>((powers.size() + 7) / 8);
    return multiples_of_powers(log_min, log_max, {1}, step);
  }
  if (powers.size() >= 3) return powers;
  std::vector<Tick> ticks = multiples_of_powers(log_min, log_max, {1, 2, 5}, 1);
  if (ticks.size() >= 3) return ticks;
  return evenly_spaced(log_min, log_max);
}

}  // namespace tessera::sweep
