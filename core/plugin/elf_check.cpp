#include "core/plugin/elf_check.h"

#include <elf.h>

#include <cstring>

#include "core/io/mapped_file.h"

namespace tessera {
namespace {

#if defined(__x86_64__)
constexpr uint16_t kHostMachine = EM_X86_64;
constexpr const char* kHostMachineName = "x86-64";
#elif defined(__aarch64__)
constexpr uint16_t kHostMachine = EM_AARCH64;
constexpr const char* kHostMachineName = "AArch64";
#else
#error "tessera's plugin check knows x86-64 and AArch64; add this machine's EM_ value"
#endif

// offset + size <= file, without overflow.
bool fits(uint64_t offset, uint64_t size, uint64_t file) {
  return offset <= file && size <= file - offset;
}

// count * entry bytes starting at offset lie inside the file.
bool table_fits(uint64_t offset, uint64_t count, uint64_t entry, uint64_t file) {
  if (count != 0 && entry > file / count) return false;
  return fits(offset, count * entry, file);
}

// The first bytes of the file, non-printable ones as \xhh.
std::string printable_start(std::span<const uint8_t> image) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string shown;
  for (std::size_t i = 0; i < image.size() && i < 8; ++i) {
    const uint8_t byte = image[i];
    if (byte >= 0x20 && byte < 0x7F) {
      shown += static_cast<char>(byte);
    } else {
      shown += "\\x";
      shown += kDigits[byte >> 4];
      shown += kDigits[byte & 15];
    }
  }
  return shown;
}

}  // namespace

Status check_elf_shared_object(std::span<const uint8_t> image, const std::string& path) {
  const uint64_t size = image.size();
  const std::string fix =
      "; rebuild or reinstall the plugin, or remove it from the plugin search path";
  const auto refuse = [&](const std::string& why) {
    return failed_precondition("plugin " + path + " " + why + fix);
  };
  if (size < EI_NIDENT || std::memcmp(image.data(), ELFMAG, SELFMAG) != 0)
    return refuse(
        "is not a shared library: it does not start with the ELF magic (it starts with \"" +
        printable_start(image) + "\", " + std::to_string(size) + " bytes in all)");
  if (image[EI_CLASS] != ELFCLASS64)
    return refuse("is a 32-bit ELF file; this tessera loads 64-bit plugins");
  if (image[EI_DATA] != ELFDATA2LSB)
    return refuse("is a big-endian ELF file; this machine is little-endian");
  if (size < sizeof(Elf64_Ehdr))
    return refuse("is cut short: " + std::to_string(size) + " bytes, less than an ELF header (" +
                  std::to_string(sizeof(Elf64_Ehdr)) + ")");
  Elf64_Ehdr header;
  std::memcpy(&header, image.data(), sizeof header);
  if (header.e_type != ET_DYN)
    return refuse("is an ELF file but not a shared library (e_type " +
                  std::to_string(header.e_type) + ")");
  if (header.e_machine != kHostMachine)
    return refuse("is built for another architecture (ELF machine " +
                  std::to_string(header.e_machine) + "); this machine is " + kHostMachineName);
  if (header.e_phnum == 0 || header.e_phentsize != sizeof(Elf64_Phdr))
    return refuse("has no usable program headers (" + std::to_string(header.e_phnum) + " of " +
                  std::to_string(header.e_phentsize) + " bytes)");
  if (!table_fits(header.e_phoff, header.e_phnum, sizeof(Elf64_Phdr), size))
    return refuse("is cut short: its program headers end past the file's " + std::to_string(size) +
                  " bytes");
  bool has_load = false;
  for (uint16_t i = 0; i < header.e_phnum; ++i) {
    Elf64_Phdr segment;
    std::memcpy(&segment, image.data() + header.e_phoff + i * sizeof(Elf64_Phdr), sizeof segment);
    if (segment.p_type == PT_LOAD) has_load = true;
    if (segment.p_filesz == 0) continue;
    if (!fits(segment.p_offset, segment.p_filesz, size))
      return refuse("is cut short: segment " + std::to_string(i) + " needs bytes " +
                    std::to_string(segment.p_offset) + " to " +
                    std::to_string(segment.p_offset + segment.p_filesz) + " but the file has " +
                    std::to_string(size));
    if (segment.p_type == PT_LOAD && segment.p_filesz > segment.p_memsz)
      return refuse("has a segment larger in the file than in memory (damaged headers)");
  }
  if (!has_load) return refuse("has no loadable segment");
  // dlopen does not read section headers, but a file that lost them was cut short.
  if (header.e_shoff != 0 &&
      (header.e_shentsize != sizeof(Elf64_Shdr) ||
       !table_fits(header.e_shoff, header.e_shnum, sizeof(Elf64_Shdr), size)))
    return refuse("is cut short: its section headers end past the file's " + std::to_string(size) +
                  " bytes");
  return ok_status();
}

Result<std::span<const uint8_t>> find_elf_section(std::span<const uint8_t> image,
                                                  std::string_view name, const std::string& path) {
  const uint64_t size = image.size();
  const auto damaged = [&](const std::string& why) {
    return failed_precondition("plugin " + path + " has a damaged section table: " + why +
                               "; rebuild or reinstall the plugin");
  };
  Elf64_Ehdr header;
  if (size < sizeof header) return damaged("no ELF header");
  std::memcpy(&header, image.data(), sizeof header);
  if (header.e_shoff == 0 || header.e_shnum == 0)
    return not_found("plugin " + path + " has no section table");
  if (header.e_shentsize != sizeof(Elf64_Shdr) ||
      !table_fits(header.e_shoff, header.e_shnum, sizeof(Elf64_Shdr), size))
    return damaged("the section headers end past the file");
  const auto section = [&](uint64_t index) {
    Elf64_Shdr s;
    std::memcpy(&s, image.data() + header.e_shoff + index * sizeof(Elf64_Shdr), sizeof s);
    return s;
  };
  if (header.e_shstrndx >= header.e_shnum) return damaged("the section-name index is out of range");
  const Elf64_Shdr names = section(header.e_shstrndx);
  if (names.sh_type != SHT_STRTAB || !fits(names.sh_offset, names.sh_size, size))
    return damaged("the section names are not a string table inside the file");
  const auto* strings = reinterpret_cast<const char*>(image.data() + names.sh_offset);
  for (uint64_t i = 0; i < header.e_shnum; ++i) {
    const Elf64_Shdr s = section(i);
    if (s.sh_name >= names.sh_size) continue;
    // The name must end inside the string table.
    const std::size_t max_length = static_cast<std::size_t>(names.sh_size - s.sh_name);
    const std::string_view found(strings + s.sh_name, strnlen(strings + s.sh_name, max_length));
    if (found.size() == max_length || found != name) continue;
    if (s.sh_type == SHT_NOBITS || !fits(s.sh_offset, s.sh_size, size))
      return damaged("section " + std::string(name) + " lies outside the file");
    return image.subspan(static_cast<std::size_t>(s.sh_offset),
                         static_cast<std::size_t>(s.sh_size));
  }
  return not_found("plugin " + path + " has no " + std::string(name) + " section");
}

Status check_elf_file(const std::string& path) {
  auto file = MappedFile::open(path);
  if (!file.ok()) return failed_precondition("plugin " + file.status().message());
  return check_elf_shared_object({(*file)->data(), (*file)->size()}, path);
}

}  // namespace tessera
