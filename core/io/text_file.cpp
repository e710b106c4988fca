#include "core/io/text_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/io/file_type.h"

namespace tessera {

Result<std::string> read_text_file(const std::string& path, std::string_view what,
                                   uint64_t max_bytes) {
  const std::string name = std::string(what) + " '" + path + "'";
  if (path.empty()) return invalid_argument(std::string(what) + ": empty file path");
  // O_NONBLOCK: opening a FIFO must not wait for a writer.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    const int err = errno;
    if (err == ENOENT || err == ENOTDIR) return not_found(name + " does not exist");
    if (err == EACCES || err == EPERM)
      return failed_precondition(name + " cannot be read: permission denied");
    return internal_error(name + " cannot be opened: " + std::strerror(err));
  }
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};

  struct stat st {};
  if (::fstat(fd, &st) != 0)
    return internal_error(name + " cannot be examined: " + std::strerror(errno));
  if (!S_ISREG(st.st_mode))
    return invalid_argument(name + " is " + file_type_name(st.st_mode) + ", not a regular file");
  const auto size = static_cast<uint64_t>(st.st_size);
  if (size > max_bytes)
    return resource_exhausted(name + " has " + std::to_string(size) + " bytes, more than the " +
                              std::to_string(max_bytes) + " a " + std::string(what) + " may have");

  std::string text(static_cast<std::size_t>(size), '\0');
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::read(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return internal_error(name + " cannot be read: " + std::strerror(errno));
    if (n == 0) break;  // the file shrank while we read it: keep what is there
    done += static_cast<std::size_t>(n);
  }
  text.resize(done);
  return text;
}

}  // namespace tessera
