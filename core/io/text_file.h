// Reading a whole small file a user names (a config, a text to score) with the
// checks the model reader makes: it must be a regular file, no larger than a
// limit, and it is read without blocking, so /dev/zero, a FIFO or a directory
// gives a clear error instead of growing memory or hanging.
#pragma once

#include <cstdint>
#include <string>

#include "core/status/status.h"

namespace tessera {

// The bytes of `path`. `what` names the file in messages ("config file",
// "text file"). Errors: NotFound (no such file), InvalidArgument (a directory,
// a device, a FIFO or socket: "not a regular file"), FailedPrecondition
// (permission denied), ResourceExhausted (larger than max_bytes, with the
// size and the limit), Internal (a read error). Every message names the path.
Result<std::string> read_text_file(const std::string& path, std::string_view what,
                                   uint64_t max_bytes);

}  // namespace tessera
