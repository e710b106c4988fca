// Where to label a log axis, and with what text. PLplot labels a log axis
// only at powers of ten, so an axis spanning less than a decade (3 to 7)
// would have no numbers at all, and one spanning two (1 to 64) only "1" and
// "10"; sweep axes are often like that.
#pragma once

#include <string>
#include <vector>

namespace tessera::sweep {

struct Tick {
  double position;    // log10 of the value: where PLplot draws it
  std::string label;  // PLplot text ("#u" starts a superscript)
};

// Ticks inside [log_min, log_max], ascending: the powers of ten (every
// second, fifth... when there are more than ten), joined by their 2 and 5
// multiples when fewer than three; within one decade, evenly spaced values
// (0.5, 1, 1.5 ... times a power of ten).
std::vector<Tick> log_axis_ticks(double log_min, double log_max);

// "1", "20", "5000", "0.05" while that is short; "2×10^6" beyond.
std::string log_tick_label(int mantissa, int exponent);

}  // namespace tessera::sweep
