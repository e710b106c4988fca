#include "apps/tessera/sweep/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <system_error>
#include <utility>

namespace tessera::sweep {
namespace {

// Distinguishes the temporaries of one process (two threads writing beside
// the same path get different names).
std::atomic<unsigned> temp_counter{0};

Status status_for_errno(int errno_value, std::string message) {
  switch (errno_value) {
    case ENOENT:
    case ENOTDIR:
      return not_found(std::move(message));
    case EACCES:
    case EPERM:
    case EROFS:
      return failed_precondition(std::move(message));
    case EISDIR:
      return invalid_argument(std::move(message));
    default:
      return internal_error(std::move(message));
  }
}

}  // namespace

Result<AtomicFile> AtomicFile::create(std::string path, std::string_view what) {
  // O_EXCL with a fresh name instead of mkstemp: mkstemp makes the file 0600,
  // and the result should get the usual permissions (0666 less the umask).
  for (int attempt = 0; attempt < 100; ++attempt) {
    std::string temp_path = path + ".tmp-" + std::to_string(::getpid()) + "-" +
                            std::to_string(temp_counter.fetch_add(1));
    const int fd = ::open(temp_path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0) return AtomicFile(std::move(path), std::string(what), std::move(temp_path), fd);
    if (errno != EEXIST) {
      const int saved = errno;
      return status_for_errno(saved, "cannot write " + std::string(what) + " '" + path +
                                         "': creating a temporary file beside it: " +
                                         std::generic_category().message(saved));
    }
  }
  return internal_error("cannot write " + std::string(what) + " '" + path +
                        "': every temporary name beside it is taken");
}

AtomicFile::AtomicFile(std::string path, std::string what, std::string temp_path, int fd)
    : path_(std::move(path)), what_(std::move(what)), temp_path_(std::move(temp_path)), fd_(fd) {}

AtomicFile::AtomicFile(AtomicFile&& other) noexcept
    : path_(std::move(other.path_)),
      what_(std::move(other.what_)),
      temp_path_(std::move(other.temp_path_)),
      fd_(std::exchange(other.fd_, -1)) {}

AtomicFile& AtomicFile::operator=(AtomicFile&& other) noexcept {
  if (this != &other) {
    discard();
    path_ = std::move(other.path_);
    what_ = std::move(other.what_);
    temp_path_ = std::move(other.temp_path_);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

AtomicFile::~AtomicFile() {
  discard();
}

void AtomicFile::discard() {
  if (fd_ < 0) return;
  ::close(fd_);
  ::unlink(temp_path_.c_str());
  fd_ = -1;
}

Status AtomicFile::error(std::string_view action, int errno_value) const {
  return status_for_errno(errno_value, "cannot write " + what_ + " '" + path_ +
                                           "': " + std::string(action) + ": " +
                                           std::generic_category().message(errno_value));
}

Status AtomicFile::write(std::string_view bytes) {
  TESSERA_CHECK(fd_ >= 0, "AtomicFile::write after commit");
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd_, bytes.data(), bytes.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return error("writing", errno);
    }
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  return ok_status();
}

Status AtomicFile::commit() {
  TESSERA_CHECK(fd_ >= 0, "AtomicFile::commit twice");
  // fsync before rename: after a crash the path holds the old file or the
  // whole new one, never an empty one.
  if (::fsync(fd_) != 0) {
    const Status status = error("flushing to disk", errno);
    discard();
    return status;
  }
  const int fd = std::exchange(fd_, -1);
  if (::close(fd) != 0) {
    const Status status = error("closing", errno);
    ::unlink(temp_path_.c_str());
    return status;
  }
  if (std::rename(temp_path_.c_str(), path_.c_str()) != 0) {
    const Status status = error("renaming '" + temp_path_ + "' into place", errno);
    ::unlink(temp_path_.c_str());
    return status;
  }
  return ok_status();
}

}  // namespace tessera::sweep
