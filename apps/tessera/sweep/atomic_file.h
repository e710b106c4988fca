// A file written under a temporary name beside its final path and renamed
// over it on commit(), so a reader (or a sweep killed half way) never sees a
// half-written CSV or PNG. Dropped without commit(), the temporary is removed.
#pragma once

#include <string>
#include <string_view>

#include "core/status/status.h"

namespace tessera::sweep {

class AtomicFile {
 public:
  // Creates "<path>.tmp-<pid>-<n>" in the directory of `path`. `what` names
  // the file in messages ("CSV file"). Errors name `path`: NotFound (the
  // directory is missing), FailedPrecondition (permission denied, read-only),
  // Internal (anything else).
  static Result<AtomicFile> create(std::string path, std::string_view what);

  AtomicFile(AtomicFile&& other) noexcept;
  AtomicFile& operator=(AtomicFile&& other) noexcept;
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  ~AtomicFile();

  const std::string& path() const { return path_; }
  const std::string& temp_path() const { return temp_path_; }
  // The temporary's descriptor, open for reading and writing (to check what
  // another writer put there). A writer that needs its own FILE* dup()s it,
  // as AtomicFile closes this one.
  int fd() const { return fd_; }

  Status write(std::string_view bytes);
  // Flushes to disk, closes and renames the temporary over `path`.
  Status commit();

 private:
  AtomicFile(std::string path, std::string what, std::string temp_path, int fd);
  Status error(std::string_view action, int errno_value) const;
  void discard();

  std::string path_;
  std::string what_;
  std::string temp_path_;
  int fd_ = -1;
};

}  // namespace tessera::sweep
