#include "core/io/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/io/file_type.h"

namespace tessera {
namespace {

// Closes the descriptor on every path out of open(); the mapping stays valid.
class FdCloser {
 public:
  explicit FdCloser(int fd) : fd_(fd) {}
  ~FdCloser() {
    if (fd_ >= 0) ::close(fd_);
  }
  FdCloser(const FdCloser&) = delete;
  FdCloser& operator=(const FdCloser&) = delete;

 private:
  int fd_;
};

Status open_error(const std::string& path, int err) {
  const std::string reason = std::strerror(err);
  switch (err) {
    case ENOENT:
    case ENOTDIR:
      return not_found(path + ": no such file");
    case EACCES:
    case EPERM:
      return failed_precondition(path + ": permission denied (make the file readable: " + reason +
                                 ")");
    case EISDIR:
      return invalid_argument(path + ": is a directory, expected a file");
    default:
      return internal_error(path + ": cannot open: " + reason);
  }
}

}  // namespace

Result<std::shared_ptr<const MappedFile>> MappedFile::open(const std::string& path) {
  if (path.empty()) return invalid_argument("empty file path");
  // O_NONBLOCK so that opening a FIFO by mistake does not hang; it changes
  // nothing for regular files.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return open_error(path, errno);
  FdCloser closer(fd);

  struct stat st {};
  if (::fstat(fd, &st) != 0) return internal_error(path + ": cannot stat: " + std::strerror(errno));
  if (!S_ISREG(st.st_mode))
    return invalid_argument(path + ": is " + file_type_name(st.st_mode) +
                            ", expected a regular file");
  if (st.st_size == 0) return data_loss(path + ": the file is empty (0 bytes)");

  const auto size = static_cast<std::size_t>(st.st_size);
  void* addr = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  if (addr == MAP_FAILED) {
    return internal_error(path + ": cannot map " + std::to_string(size) +
                          " bytes: " + std::strerror(errno));
  }

  std::shared_ptr<MappedFile> file(new MappedFile());
  file->path_ = path;
  file->data_ = static_cast<const uint8_t*>(addr);
  file->size_ = size;
  file->mapped_ = true;
  return std::shared_ptr<const MappedFile>(std::move(file));
}

std::shared_ptr<const MappedFile> MappedFile::from_bytes(std::string path,
                                                         std::vector<uint8_t> bytes) {
  std::shared_ptr<MappedFile> file(new MappedFile());
  file->path_ = std::move(path);
  file->owned_ = std::move(bytes);
  file->owned_.shrink_to_fit();  // exact size, so overreads hit the allocator's redzone
  file->data_ = file->owned_.data();
  file->size_ = file->owned_.size();
  return file;
}

MappedFile::~MappedFile() {
  if (mapped_) ::munmap(const_cast<uint8_t*>(data_), size_);
}

}  // namespace tessera
