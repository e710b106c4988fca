#include "core/plugin/abi_check.h"

#include <cstddef>
#include <cstring>

#include "core/io/mapped_file.h"
#include "core/plugin/elf_check.h"
#include "core/plugin/plugin_kinds.h"

namespace tessera {
namespace {

constexpr std::string_view kRebuild =
    "; rebuild the plugin against this tessera's SDK (find_package(tessera) from the "
    "installation you run) or remove it from the plugin search path";

std::string abi_string(uint32_t major, uint32_t minor) {
  return std::to_string(major) + "." + std::to_string(minor);
}

std::string_view stdlib_part(std::string_view fingerprint) {
  return fingerprint.substr(0, fingerprint.find(';'));
}

// A NUL-terminated string inside a fixed array, or nullopt-like empty view
// with ok = false when it runs to the end.
std::string_view bounded(const char* text, std::size_t capacity, bool& ok) {
  const std::size_t length = strnlen(text, capacity);
  ok = ok && length < capacity;
  return std::string_view(text, length);
}

}  // namespace

Status check_abi_identity(uint32_t abi_major, uint32_t abi_minor, std::string_view fingerprint,
                          std::string_view sdk_hash, std::string_view origin) {
  const std::string file(origin);
  if (abi_major != TESSERA_ABI_MAJOR || abi_minor > TESSERA_ABI_MINOR) {
    return failed_precondition(
        "plugin " + file + " was built for tessera plugin ABI " + abi_string(abi_major, abi_minor) +
        ", but this tessera has ABI " + abi_string(TESSERA_ABI_MAJOR, TESSERA_ABI_MINOR) +
        " (a plugin needs the same major and a minor no newer)" + std::string(kRebuild));
  }
  const std::string_view ours = TESSERA_BUILD_FINGERPRINT;
  if (stdlib_part(fingerprint) != stdlib_part(ours)) {
    return failed_precondition("plugin " + file + " was built with " + std::string(fingerprint) +
                               ", but this tessera was built with " + std::string(ours) +
                               "; C++ objects cross the plugin boundary, so the C++ standard "
                               "library must match" +
                               std::string(kRebuild));
  }
  if (sdk_hash != TESSERA_SDK_HASH) {
    return failed_precondition(
        "plugin " + file + " was compiled against other tessera SDK headers (hash " +
        std::string(sdk_hash.substr(0, 12)) + "..., this tessera's are " +
        std::string(std::string_view(TESSERA_SDK_HASH).substr(0, 12)) +
        "...); the interfaces it implements may differ from the core's" + std::string(kRebuild));
  }
  return ok_status();
}

Status check_plugin_file(const std::string& path) {
  auto file = MappedFile::open(path);
  if (!file.ok()) return failed_precondition("plugin " + file.status().message());
  const std::span<const uint8_t> image((*file)->data(), (*file)->size());
  RETURN_IF_ERROR(check_elf_shared_object(image, path));
  auto section = find_elf_section(image, TESSERA_ABI_SECTION, path);
  if (!section.ok()) {
    if (section.status().code() != StatusCode::kNotFound) return section.status();
    return failed_precondition("plugin " + path +
                               " carries no tessera ABI stamp (section " TESSERA_ABI_SECTION
                               "): it was built for tessera plugin ABI 1.x, or not with "
                               "TESSERA_PLUGIN(...) from core/plugin/sdk.h" +
                               std::string(kRebuild));
  }
  TesseraAbiStamp stamp;
  if (section->size() != sizeof stamp)
    return failed_precondition("plugin " + path + " has an ABI stamp of " +
                               std::to_string(section->size()) + " bytes, expected " +
                               std::to_string(sizeof stamp) + std::string(kRebuild));
  std::memcpy(&stamp, section->data(), sizeof stamp);
  bool terminated = std::memcmp(stamp.magic, TESSERA_ABI_MAGIC, sizeof stamp.magic) == 0;
  const std::string_view fingerprint =
      bounded(stamp.fingerprint, sizeof stamp.fingerprint, terminated);
  const std::string_view hash = bounded(stamp.sdk_hash, sizeof stamp.sdk_hash, terminated);
  if (!terminated)
    return failed_precondition("plugin " + path + " has a damaged ABI stamp" +
                               std::string(kRebuild));
  return check_abi_identity(stamp.abi_major, stamp.abi_minor, fingerprint, hash, path);
}

Status check_plugin_descriptor(const TesseraPluginDescriptor& d, std::string_view origin) {
  const std::string file(origin);
  RETURN_IF_ERROR(check_abi_identity(d.abi_major, d.abi_minor,
                                     d.build_fingerprint ? d.build_fingerprint : "",
                                     d.sdk_hash ? d.sdk_hash : "", origin));
  if (d.struct_size < offsetof(TesseraPluginDescriptor, create) + sizeof(d.create)) {
    return failed_precondition("plugin " + file + " declares a descriptor of " +
                               std::to_string(d.struct_size) + " bytes, too small for ABI " +
                               abi_string(d.abi_major, d.abi_minor) + std::string(kRebuild));
  }
  if (!d.kind || find_plugin_kind(d.kind) == nullptr) {
    return failed_precondition("plugin " + file + " declares unknown kind '" +
                               std::string(d.kind ? d.kind : "(null)") + "'");
  }
  if (!d.name || !*d.name || !d.create) {
    return failed_precondition("plugin " + file + " has an empty name or no create function");
  }
  return ok_status();
}

}  // namespace tessera
