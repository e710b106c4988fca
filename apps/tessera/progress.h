// A progress line on stderr for long work: done/total, rate and time left,
// redrawn in place at most a few times a second (not once per item, which
// floods a log), and finished with a newline.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace tessera::cli {

class Progress {
 public:
  // `what` names the work ("scoring"), `unit` what is counted ("tokens").
  Progress(std::string what, std::string unit, int64_t total);
  // Redraws if enough time has passed since the last line, or when done == total.
  void update(int64_t done);
  // Ends the line (also called by the destructor when still open).
  void finish();
  ~Progress();

 private:
  std::string what_;
  std::string unit_;
  int64_t total_;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_;
  bool drawn_ = false;
  bool finished_ = false;
};

// "1h02m", "3m05s", "12s".
std::string duration_text(double seconds);

}  // namespace tessera::cli
