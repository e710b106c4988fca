// Where to label an axis, and with what text: one format per axis. PLplot
// labels a log axis only at powers of ten, so an axis spanning less than a
// decade (3 to 7) would have no numbers at all, and one spanning two (1 to
// 64) only "1" and "10"; sweep axes are often like that. And PLplot's own
// labels switch between "50000" and "10^5" within one axis.
#pragma once

#include <string>
#include <vector>

namespace tessera::sweep {

struct Tick {
  double position;    // where PLplot draws it: the value, log10 of it on a log axis
  std::string label;  // PLplot text ("#u" starts a superscript)
};

// Ticks inside [log_min, log_max], ascending: the powers of ten (every
// second, fifth... when there are more than ten), joined by their 2 and 5
// multiples when fewer than three; within one decade, evenly spaced values
// (0.5, 1, 1.5 ... times a power of ten). Labelled by tick_labels().
std::vector<Tick> log_axis_ticks(double log_min, double log_max);

// Ticks inside [min, max], ascending: the multiples of a step of 1, 2 or 5
// times a power of ten, four to ten of them. Labelled by tick_labels(), all
// with as many decimals as the step needs ("0.30", "0.35", "0.40").
std::vector<Tick> linear_axis_ticks(double min, double max);

// The labels of one axis's tick values, all in one format: plain decimals
// while every value is 0 or 0.001 <= |v| < 10^5 ("0.5", "20", "5000"; with
// `decimals` decimals each, or as few as each needs when it is negative);
// otherwise every value as m×10^e, each mantissa with the same decimals
// ("1×10^5", "5×10^5"; "10^5", "10^6" when every mantissa is 1; 0 as "0").
std::vector<std::string> tick_labels(const std::vector<double>& values, int decimals = -1);

}  // namespace tessera::sweep
