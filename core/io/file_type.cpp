#include "core/io/file_type.h"

#include <sys/stat.h>

namespace tessera {

std::string file_type_name(uint32_t st_mode) {
  if (S_ISREG(st_mode)) return "a regular file";
  if (S_ISDIR(st_mode)) return "a directory";
  if (S_ISFIFO(st_mode)) return "a FIFO (named pipe)";
  if (S_ISCHR(st_mode)) return "a character device";
  if (S_ISBLK(st_mode)) return "a block device";
  if (S_ISSOCK(st_mode)) return "a socket";
  return "not a regular file";
}

}  // namespace tessera
