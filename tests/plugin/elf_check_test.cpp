// The ELF check before dlopen. A truncated libtessera_*.so on the plugin path
// used to kill every command with SIGBUS inside the loader, and a text file
// was refused as "Bad file descriptor".
#include "core/plugin/elf_check.h"

#include <elf.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstring>
#include <filesystem>
#include <map>

#include "core/plugin/builtin_plugins.h"
#include "core/plugin/registry.h"
#include "tests/gguf/gguf_test_util.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;
using testing::TempDir;

// A real plugin, built in every configuration of the tree.
const std::string kRealPlugin =
    std::string(TESSERA_BINARY_DIR) + "/test_plugins/wrong_abi/libtessera_compressor_wrongabi.so";

std::vector<uint8_t> real_plugin() {
  static const std::vector<uint8_t> bytes = testing::read_bytes(kRealPlugin);
  return bytes;
}

Status check(const std::vector<uint8_t>& bytes) {
  return check_elf_shared_object(bytes, "libtessera_x.so");
}

TEST(ElfCheck, ARealPluginPasses) {
  ASSERT_GT(real_plugin().size(), 1000u);
  EXPECT_TRUE(check(real_plugin()).ok()) << check(real_plugin()).message();
  EXPECT_TRUE(check_elf_file(kRealPlugin).ok());
}

TEST(ElfCheck, EveryTruncationIsRefused) {
  const std::vector<uint8_t> whole = real_plugin();
  for (std::size_t keep :
       {std::size_t{0}, std::size_t{10}, std::size_t{63}, std::size_t{64}, std::size_t{200},
        std::size_t{3000}, whole.size() / 2, whole.size() - 1}) {
    SCOPED_TRACE("kept " + std::to_string(keep) + " bytes");
    const std::vector<uint8_t> cut(whole.begin(),
                                   whole.begin() + static_cast<std::ptrdiff_t>(keep));
    const Status status = check(cut);
    ASSERT_FALSE(status.ok());
    EXPECT_EQ(status.code(), StatusCode::kFailedPrecondition);
    EXPECT_THAT(status.message(), HasSubstr("libtessera_x.so"));
  }
}

TEST(ElfCheck, NotElfSaysSo) {
  const std::string text = "hello, I am not a library\n";
  const Status status = check(std::vector<uint8_t>(text.begin(), text.end()));
  ASSERT_FALSE(status.ok());
  EXPECT_THAT(status.message(),
              HasSubstr("is not a shared library: it does not start with the ELF magic (it starts "
                        "with \"hello, I\""));
}

TEST(ElfCheck, WrongClassMachineOrTypeIsNamed) {
  std::vector<uint8_t> bits32 = real_plugin();
  bits32[EI_CLASS] = ELFCLASS32;
  EXPECT_THAT(check(bits32).message(), HasSubstr("32-bit"));

  std::vector<uint8_t> other_machine = real_plugin();
  const uint16_t riscv = EM_RISCV;
  std::memcpy(other_machine.data() + offsetof(Elf64_Ehdr, e_machine), &riscv, 2);
  EXPECT_THAT(check(other_machine).message(), HasSubstr("another architecture"));

  std::vector<uint8_t> executable = real_plugin();
  const uint16_t exec = ET_EXEC;
  std::memcpy(executable.data() + offsetof(Elf64_Ehdr, e_type), &exec, 2);
  EXPECT_THAT(check(executable).message(), HasSubstr("not a shared library"));
}

TEST(ElfCheck, HeadersPointingPastTheEndAreRefused) {
  std::vector<uint8_t> bytes = real_plugin();
  const uint64_t far = uint64_t{1} << 62;
  std::memcpy(bytes.data() + offsetof(Elf64_Ehdr, e_phoff), &far, 8);
  EXPECT_THAT(check(bytes).message(), HasSubstr("program headers end past"));
}

// What a user sees: `tessera plugins` lists each bad file with its reason,
// and the good plugins still load.
TEST(ElfCheck, ScanRefusesBadFilesAndKeepsGoing) {
  TempDir dir;
  const std::vector<uint8_t> whole = real_plugin();
  dir.write("libtessera_cache_truncated.so",
            std::vector<uint8_t>(whole.begin(), whole.begin() + 3000));
  dir.write("libtessera_cache_text.so", {'h', 'i', '\n'});
  dir.write("libtessera_cache_empty.so", {});
  ASSERT_EQ(::mkfifo(dir.file("libtessera_cache_fifo.so").c_str(), 0600), 0);
  std::filesystem::create_directory(dir.file("libtessera_cache_dir.so"));
  std::filesystem::copy_file(kRealPlugin, dir.file("libtessera_compressor_wrongabi.so"));

  PluginRegistry registry(builtin_plugins());
  registry.scan({dir.file("")});
  ASSERT_EQ(registry.rejected().size(), 6u);
  std::map<std::string, std::string> reasons;
  for (const auto& r : registry.rejected())
    reasons[std::filesystem::path(r.file).filename().string()] = r.reason.message();
  EXPECT_THAT(reasons["libtessera_cache_truncated.so"], HasSubstr("is cut short"));
  EXPECT_THAT(reasons["libtessera_cache_text.so"], HasSubstr("does not start with the ELF magic"));
  EXPECT_THAT(reasons["libtessera_cache_empty.so"], HasSubstr("empty"));
  EXPECT_THAT(reasons["libtessera_cache_fifo.so"], HasSubstr("FIFO"));
  EXPECT_THAT(reasons["libtessera_cache_dir.so"], HasSubstr("directory"));
  // A whole library passes the check and reaches the ABI check.
  EXPECT_THAT(reasons["libtessera_compressor_wrongabi.so"], HasSubstr("ABI 99.0"));
  auto found = registry.find("cache", "truncated");
  ASSERT_FALSE(found.ok());
  EXPECT_THAT(found.status().message(), HasSubstr("was found but refused: plugin"));
}

}  // namespace
}  // namespace tessera
