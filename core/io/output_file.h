// The one way tessera writes an output file (a GGUF model, a sweep's CSV and
// PNGs, and every writer after them). The path is resolved first: a symbolic
// link is followed to its target (as cp and compilers do); a dangling or
// looping link, or an existing target that is not a regular file (a FIFO, a
// device, a socket, a directory), is refused before anything is written. The
// bytes go to a temporary beside the resolved target, are flushed and synced,
// and the temporary is renamed onto the target, keeping an existing target's
// permissions. A write that fails (disk full, RLIMIT_FSIZE, a read-only
// directory) or a process killed by SIGINT/SIGTERM/SIGHUP/SIGQUIT leaves the
// old target as it was and no temporary behind (core/io/temporary_files.h).
#pragma once

#include <string>
#include <string_view>

#include "core/io/temporary_files.h"
#include "core/status/status.h"

namespace tessera {

// Where a file named `path` would be written: `path` itself, or the final
// target of the links it names; the target need not exist, but its directory
// must. `what` names the file in messages ("GGUF file"). Errors name the path
// and say what it is: InvalidArgument (a FIFO, device, socket or directory;
// a dangling link; a link loop), NotFound (the directory does not exist),
// FailedPrecondition (permission denied while resolving).
Result<std::string> resolve_output_path(const std::string& path, std::string_view what);

// The same checks for a directory that outputs go into (`sweep --out`): a
// link is followed; an existing target must be a directory; a missing one is
// created with its parents. Returns the resolved directory.
Result<std::string> prepare_output_directory(const std::string& path, std::string_view what);

class OutputFile {
 public:
  // Resolves `path` (resolve_output_path) and creates the temporary
  // "<target>.tmp-<pid>-<n>" beside the target. Errors name `path`.
  static Result<OutputFile> create(const std::string& path, std::string_view what);

  OutputFile(OutputFile&& other) noexcept;
  OutputFile& operator=(OutputFile&& other) noexcept;
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;
  // Without commit() the temporary is removed and the target left alone.
  ~OutputFile();

  const std::string& path() const { return path_; }
  const std::string& target() const { return target_; }
  const std::string& temp_path() const { return temp_path_; }
  // The temporary's descriptor, open for reading and writing. A writer that
  // needs its own FILE* dup()s it, as OutputFile closes this one.
  int fd() const { return fd_; }

  Status write(std::string_view bytes);
  // Flushes to disk, closes and renames the temporary onto the target. On an
  // error the temporary is removed and the target is untouched.
  Status commit();

 private:
  OutputFile(std::string path, std::string target, std::string what, std::string temp_path, int fd,
             TemporaryFileRegistration registration);
  Status error(std::string_view action, int errno_value) const;
  void discard();

  std::string path_;
  std::string target_;
  std::string what_;
  std::string temp_path_;
  int fd_ = -1;
  TemporaryFileRegistration registration_;
};

}  // namespace tessera
