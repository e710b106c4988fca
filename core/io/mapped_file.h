// A whole file mapped read-only into memory. Weight tensors of a loaded model
// are views into this mapping, so whoever holds those views keeps the
// shared_ptr alive (LoadedModel::file does).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/status/status.h"

namespace tessera {

class MappedFile {
 public:
  // Maps `path` read-only. Errors: NotFound (no such file), InvalidArgument (a
  // directory or not a regular file), FailedPrecondition (permission denied),
  // DataLoss (empty file), Internal (mmap failed). Every message names the path.
  static Result<std::shared_ptr<const MappedFile>> open(const std::string& path);

  // Holds a copy of `bytes` on the heap instead of a mapping, under the name
  // `path` (used in error messages). For tests and generated files; with
  // AddressSanitizer a read one byte past the end is caught, which a page-sized
  // mapping would hide.
  static std::shared_ptr<const MappedFile> from_bytes(std::string path, std::vector<uint8_t> bytes);

  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  // Valid for the lifetime of this object; never written to.
  const uint8_t* data() const { return data_; }
  std::size_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  MappedFile() = default;

  std::string path_;
  const uint8_t* data_ = nullptr;
  std::size_t size_ = 0;
  bool mapped_ = false;         // true: data_ came from mmap and is unmapped on destruction
  std::vector<uint8_t> owned_;  // the bytes of from_bytes()
};

}  // namespace tessera
