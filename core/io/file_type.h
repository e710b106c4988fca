// Names what a path is, for messages about paths that exist but are not the
// regular file expected (a directory, a FIFO, /dev/zero...).
#pragma once

#include <cstdint>
#include <string>

namespace tessera {

// "a directory", "a FIFO (named pipe)", "a character device", ... for a
// st_mode; "a regular file" for one.
std::string file_type_name(uint32_t st_mode);

}  // namespace tessera
