#include "core/io/output_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <system_error>
#include <utility>

#include "core/io/file_type.h"

namespace tessera {
namespace {

// Distinguishes the temporaries of one process (two threads writing beside
// the same path get different names).
std::atomic<unsigned> temp_counter{0};

// The kernel's own limit on links followed in one lookup.
constexpr int kMaxLinkHops = 40;

std::string describe(std::string_view what, const std::string& path) {
  return std::string(what) + " '" + path + "'";
}

std::string errno_text(int errno_value) {
  return std::generic_category().message(errno_value);
}

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
    case ELOOP:
      return invalid_argument(std::move(message));
    case ENOSPC:
    case EDQUOT:
    case EFBIG:
      return resource_exhausted(std::move(message));
    default:
      return internal_error(std::move(message));
  }
}

std::string directory_of(const std::string& path) {
  const std::string parent = std::filesystem::path(path).parent_path().string();
  return parent.empty() ? "." : parent;
}

// Follows `path` through symbolic links. Sets `final_stat` and `exists` for
// the final target.
Result<std::string> follow_links(const std::string& path, std::string_view what,
                                 struct stat& final_stat, bool& exists) {
  std::string current = path;
  for (int hop = 0; hop <= kMaxLinkHops; ++hop) {
    if (::lstat(current.c_str(), &final_stat) != 0) {
      const int err = errno;
      if (err != ENOENT)
        return status_for_errno(err, "cannot write " + describe(what, path) + ": examining '" +
                                         current + "': " + errno_text(err));
      if (hop > 0)
        return invalid_argument("cannot write " + describe(what, path) +
                                ": it is a dangling symbolic link (its target '" + current +
                                "' does not exist); remove the link or create the target");
      exists = false;
      return current;
    }
    if (!S_ISLNK(final_stat.st_mode)) {
      exists = true;
      return current;
    }
    std::error_code ec;
    const std::filesystem::path link_target = std::filesystem::read_symlink(current, ec);
    if (ec)
      return internal_error("cannot write " + describe(what, path) + ": reading the link '" +
                            current + "': " + ec.message());
    current = link_target.is_absolute()
                  ? link_target.string()
                  : (std::filesystem::path(directory_of(current)) / link_target).string();
  }
  return invalid_argument("cannot write " + describe(what, path) +
                          ": its symbolic links loop (more than " + std::to_string(kMaxLinkHops) +
                          " followed); point the link at a file");
}

}  // namespace

Result<std::string> resolve_output_path(const std::string& path, std::string_view what) {
  if (path.empty()) return invalid_argument(std::string(what) + ": empty file path");
  struct stat st {};
  bool exists = false;
  ASSIGN_OR_RETURN(std::string target, follow_links(path, what, st, exists));
  const std::string via = target == path ? "" : " (through links, '" + target + "')";
  if (exists) {
    if (!S_ISREG(st.st_mode))
      return invalid_argument("cannot write " + describe(what, path) + ": it is" + via + " " +
                              file_type_name(st.st_mode) +
                              ", not a regular file; name a regular file or a new path");
    return target;
  }
  const std::string directory = directory_of(target);
  struct stat dir_stat {};
  if (::stat(directory.c_str(), &dir_stat) != 0) {
    const int err = errno;
    return status_for_errno(err, "cannot write " + describe(what, path) + ": its directory '" +
                                     directory + "'" + (err == ENOENT ? " does not exist" : "") +
                                     (err == ENOENT ? "" : ": " + errno_text(err)));
  }
  if (!S_ISDIR(dir_stat.st_mode))
    return not_found("cannot write " + describe(what, path) + ": '" + directory + "' is " +
                     file_type_name(dir_stat.st_mode) + ", not a directory");
  return target;
}

Result<std::string> prepare_output_directory(const std::string& path, std::string_view what) {
  if (path.empty()) return invalid_argument(std::string(what) + ": empty directory path");
  struct stat st {};
  bool exists = false;
  ASSIGN_OR_RETURN(std::string target, follow_links(path, what, st, exists));
  if (exists) {
    if (!S_ISDIR(st.st_mode))
      return invalid_argument("cannot write into " + describe(what, path) + ": it is " +
                              (target == path ? "" : "(through links, '" + target + "') ") +
                              file_type_name(st.st_mode) + ", not a directory");
    return target;
  }
  std::error_code ec;
  std::filesystem::create_directories(target, ec);
  if (ec)
    return status_for_errno(ec.value(),
                            "cannot create " + describe(what, path) + ": " + ec.message());
  return target;
}

Result<OutputFile> OutputFile::create(const std::string& path, std::string_view what) {
  ASSIGN_OR_RETURN(std::string target, resolve_output_path(path, what));
  struct stat existing {};
  const bool keep_mode = ::stat(target.c_str(), &existing) == 0;
  // O_EXCL with a fresh name instead of mkstemp: mkstemp makes the file 0600,
  // and a new file should get the usual permissions (0666 less the umask).
  for (int attempt = 0; attempt < 100; ++attempt) {
    std::string temp_path = target + ".tmp-" + std::to_string(::getpid()) + "-" +
                            std::to_string(temp_counter.fetch_add(1));
    // Registered before it exists: a signal between open and registration
    // would otherwise leave it behind.
    TemporaryFileRegistration registration(temp_path);
    const int fd = ::open(temp_path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0) {
      OutputFile file(path, std::move(target), std::string(what), std::move(temp_path), fd,
                      std::move(registration));
      if (keep_mode && ::fchmod(fd, existing.st_mode & 07777) != 0)
        return file.error("keeping the permissions of the file it replaces", errno);
      return file;
    }
    if (errno != EEXIST) {
      const int err = errno;
      return status_for_errno(err, "cannot write " + describe(what, path) +
                                       ": creating a temporary file in '" + directory_of(target) +
                                       "': " + errno_text(err));
    }
  }
  return internal_error("cannot write " + describe(what, path) +
                        ": every temporary name beside it is taken");
}

OutputFile::OutputFile(std::string path, std::string target, std::string what,
                       std::string temp_path, int fd, TemporaryFileRegistration registration)
    : path_(std::move(path)),
      target_(std::move(target)),
      what_(std::move(what)),
      temp_path_(std::move(temp_path)),
      fd_(fd),
      registration_(std::move(registration)) {}

OutputFile::OutputFile(OutputFile&& other) noexcept
    : path_(std::move(other.path_)),
      target_(std::move(other.target_)),
      what_(std::move(other.what_)),
      temp_path_(std::move(other.temp_path_)),
      fd_(std::exchange(other.fd_, -1)),
      registration_(std::move(other.registration_)) {}

OutputFile& OutputFile::operator=(OutputFile&& other) noexcept {
  if (this != &other) {
    discard();
    path_ = std::move(other.path_);
    target_ = std::move(other.target_);
    what_ = std::move(other.what_);
    temp_path_ = std::move(other.temp_path_);
    fd_ = std::exchange(other.fd_, -1);
    registration_ = std::move(other.registration_);
  }
  return *this;
}

OutputFile::~OutputFile() {
  discard();
}

void OutputFile::discard() {
  if (fd_ < 0) return;
  ::close(fd_);
  ::unlink(temp_path_.c_str());
  registration_.release();
  fd_ = -1;
}

Status OutputFile::error(std::string_view action, int errno_value) const {
  const std::string where = target_ == path_ ? "" : " (target '" + target_ + "')";
  return status_for_errno(errno_value, "cannot write " + describe(what_, path_) + where + ": " +
                                           std::string(action) + ": " + errno_text(errno_value) +
                                           "; the file was left as it was");
}

Status OutputFile::write(std::string_view bytes) {
  TESSERA_CHECK(fd_ >= 0, "OutputFile::write after commit");
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd_, bytes.data(), bytes.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      const Status status = error("writing", errno);
      discard();
      return status;
    }
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  return ok_status();
}

Status OutputFile::commit() {
  TESSERA_CHECK(fd_ >= 0, "OutputFile::commit after commit or a failed write");
  // fsync before rename: after a crash the target holds the old file or the
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
    registration_.release();
    return status;
  }
  if (std::rename(temp_path_.c_str(), target_.c_str()) != 0) {
    const Status status = error("renaming '" + temp_path_ + "' into place", errno);
    ::unlink(temp_path_.c_str());
    registration_.release();
    return status;
  }
  registration_.release();
  // The rename itself reaches the disk with the directory.
  const int dir_fd = ::open(directory_of(target_).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd >= 0) {
    ::fsync(dir_fd);
    ::close(dir_fd);
  }
  return ok_status();
}

}  // namespace tessera
