// The ELF check run on every libtessera_*.so before dlopen, and the section
// lookup that finds its ABI stamp: any bytes must get an answer, and an
// accepted image must keep its promise that every header and segment lies
// inside the file (checked again here, independently).
#include <elf.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

#include "core/plugin/elf_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const std::span<const uint8_t> image(data, size);
  if (!tessera::check_elf_shared_object(image, "fuzz.so").ok()) return 0;
  if (auto stamp = tessera::find_elf_section(image, ".tessera_abi", "fuzz.so"); stamp.ok()) {
    if (stamp->data() < data || stamp->data() + stamp->size() > data + size) __builtin_trap();
  }
  Elf64_Ehdr header;
  if (size < sizeof header) __builtin_trap();
  std::memcpy(&header, data, sizeof header);
  for (unsigned i = 0; i < header.e_phnum; ++i) {
    const unsigned __int128 end = static_cast<unsigned __int128>(header.e_phoff) +
                                  (static_cast<unsigned __int128>(i) + 1) * sizeof(Elf64_Phdr);
    if (end > size) __builtin_trap();
    Elf64_Phdr segment;
    std::memcpy(&segment, data + header.e_phoff + i * sizeof(Elf64_Phdr), sizeof segment);
    if (static_cast<unsigned __int128>(segment.p_offset) + segment.p_filesz > size &&
        segment.p_filesz != 0)
      __builtin_trap();
  }
  return 0;
}
