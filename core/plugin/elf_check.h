// Checks that a file is a whole ELF shared object for this machine before it
// is handed to dlopen. The dynamic loader maps segments as the headers say and
// trusts them: a file cut short (a copy interrupted, a full disk) makes it
// touch pages past the end of the file, and the process dies of SIGBUS, inside
// every command that scans the plugin path. A file that is not ELF at all gets
// the real reason instead of dlopen's "Bad file descriptor".
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "core/status/status.h"

namespace tessera {

// The ELF headers in `image` (the whole file) describe a shared object of this
// machine's class, byte order and architecture whose program headers, segments
// and section headers all lie inside the file. FailedPrecondition names `path`
// and what is wrong.
Status check_elf_shared_object(std::span<const uint8_t> image, const std::string& path);

// Maps `path` (a regular file, opened without blocking) and checks it as above.
Status check_elf_file(const std::string& path);

// The bytes of the section called `name` in an image that passed
// check_elf_shared_object: NotFound when there is none, FailedPrecondition
// when the section table or its names do not hold together.
Result<std::span<const uint8_t>> find_elf_section(std::span<const uint8_t> image,
                                                  std::string_view name, const std::string& path);

}  // namespace tessera
