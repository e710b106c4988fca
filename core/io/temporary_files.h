// Temporary files that must not outlive a process killed by a signal. An
// output is written to a temporary beside its target and renamed over it at
// the end; if SIGINT, SIGTERM, SIGHUP or SIGQUIT ends the process first, the
// handler installed here unlinks every registered temporary and re-raises the
// signal with its default action, so the process still dies by it.
#pragma once

#include <string>

namespace tessera {

// Registers `path` while it lives (move-only; unregisters on destruction or
// release()). The first registration installs the handlers, for each signal
// whose action is still the default (a program's own handler or SIG_IGN is
// left alone), and sets SIGXFSZ to be ignored when it is at its default, so a
// write past RLIMIT_FSIZE fails with EFBIG (an error naming the file) instead
// of killing the process.
class TemporaryFileRegistration {
 public:
  TemporaryFileRegistration() = default;
  explicit TemporaryFileRegistration(const std::string& path);
  TemporaryFileRegistration(TemporaryFileRegistration&& other) noexcept;
  TemporaryFileRegistration& operator=(TemporaryFileRegistration&& other) noexcept;
  TemporaryFileRegistration(const TemporaryFileRegistration&) = delete;
  TemporaryFileRegistration& operator=(const TemporaryFileRegistration&) = delete;
  ~TemporaryFileRegistration();

  // Stops watching the file (it was renamed into place or removed).
  void release();

 private:
  int slot_ = -1;  // -1: nothing registered (no free slot, or a path too long)
};

}  // namespace tessera
