#include "apps/tessera/progress.h"

#include <cstdio>

namespace tessera::cli {

std::string duration_text(double seconds) {
  const auto s = static_cast<long long>(seconds + 0.5);
  char text[32];
  if (s >= 3600)
    std::snprintf(text, sizeof text, "%lldh%02lldm", s / 3600, (s % 3600) / 60);
  else if (s >= 60)
    std::snprintf(text, sizeof text, "%lldm%02llds", s / 60, s % 60);
  else
    std::snprintf(text, sizeof text, "%llds", s);
  return text;
}

Progress::Progress(std::string what, std::string unit, int64_t total)
    : what_(std::move(what)),
      unit_(std::move(unit)),
      total_(total),
      start_(std::chrono::steady_clock::now()),
      last_(start_) {}

void Progress::update(int64_t done) {
  const auto now = std::chrono::steady_clock::now();
  if (done < total_ && drawn_ && now - last_ < std::chrono::milliseconds(250)) return;
  last_ = now;
  drawn_ = true;
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  const double rate = elapsed > 0 ? static_cast<double>(done) / elapsed : 0;
  const int percent = total_ > 0 ? static_cast<int>(100 * done / total_) : 100;
  std::string eta = "";
  if (done < total_ && rate > 0)
    eta = ", " + duration_text(static_cast<double>(total_ - done) / rate) + " left";
  std::fprintf(stderr, "\r%s %lld/%lld %s (%d%%, %.0f %s/s%s)   ", what_.c_str(),
               static_cast<long long>(done), static_cast<long long>(total_), unit_.c_str(), percent,
               rate, unit_.c_str(), eta.c_str());
  if (done >= total_) finish();
}

void Progress::finish() {
  if (finished_) return;
  finished_ = true;
  if (drawn_) std::fputc('\n', stderr);
}

Progress::~Progress() {
  finish();
}

}  // namespace tessera::cli
