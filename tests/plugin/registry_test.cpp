// The registry: finds the in-tree plugins, refuses wrong ABIs before running
// plugin code, and explains a missing plugin.
#include "core/plugin/registry.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>

#include "core/plugin/builtin_plugins.h"
#include "core/plugin/sdk.h"
#include "core/tensor/dtype.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

PluginRegistry scanned_registry(std::vector<std::string> dirs = {TESSERA_BUILD_PLUGIN_DIR}) {
  PluginRegistry registry(builtin_plugins());
  registry.scan(dirs);
  return registry;
}

TEST(Registry, FindsEveryInTreePlugin) {
  const auto registry = scanned_registry();
  for (const auto& [kind, name] :
       std::vector<std::pair<std::string, std::string>>{{"backend", "cpu"},
                                                        {"cache", "static"},
                                                        {"compressor", "identity"},
                                                        {"proposer", "none"},
                                                        {"verifier", "ar"},
                                                        {"scheduler", "single"}}) {
    auto found = registry.find(kind, name);
    ASSERT_TRUE(found.ok()) << found.status().to_string();
    EXPECT_EQ((*found)->kind(), kind);
    EXPECT_EQ((*found)->name(), name);
  }
  EXPECT_TRUE(registry.rejected().empty());
}

TEST(Registry, UnknownNameSuggestsTheClosestAndListsWhereItLooked) {
  const auto registry = scanned_registry();
  auto found = registry.find("compressor", "identiy");
  ASSERT_FALSE(found.ok());
  EXPECT_EQ(found.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(found.status().message(),
              HasSubstr("no compressor plugin 'identiy'; did you mean 'identity'? available: "));
  EXPECT_THAT(found.status().message(), Not(HasSubstr("?;")));
  EXPECT_THAT(found.status().message(), HasSubstr("searched: " TESSERA_BUILD_PLUGIN_DIR));
}

// `tessera plugins` shows the descriptor's line: the cpu backend's names
// every weight type the backend takes.
TEST(Registry, CpuBackendDescriptionNamesEveryWeightType) {
  const auto registry = scanned_registry();
  auto cpu = registry.find("backend", "cpu");
  ASSERT_TRUE(cpu.ok()) << cpu.status().message();
  const std::string description = (*cpu)->descriptor->description;
  for (const DType dtype : kAllDTypes)
    EXPECT_THAT(description, HasSubstr(std::string(dtype_name(dtype)))) << description;
}

TEST(Registry, RefusesAPluginBuiltForAnotherAbi) {
  const std::string dir = std::string(TESSERA_BINARY_DIR) + "/test_plugins/wrong_abi";
  const auto registry = scanned_registry({dir});
  ASSERT_EQ(registry.rejected().size(), 1u);
  const auto& rejected = registry.rejected().front();
  EXPECT_THAT(rejected.file, HasSubstr("libtessera_compressor_wrongabi.so"));
  EXPECT_EQ(rejected.reason.code(), StatusCode::kFailedPrecondition);
  const std::string core_abi =
      std::to_string(TESSERA_ABI_MAJOR) + "." + std::to_string(TESSERA_ABI_MINOR);
  EXPECT_THAT(
      rejected.reason.message(),
      HasSubstr("built for tessera plugin ABI 99.0, but this tessera has ABI " + core_abi + " "));
  EXPECT_THAT(rejected.reason.message(), HasSubstr("rebuild the plugin"));
  // Asking for it by name explains why it is not available.
  auto found = registry.find("compressor", "wrongabi");
  ASSERT_FALSE(found.ok());
  EXPECT_THAT(found.status().message(), HasSubstr("was found but refused"));
}

std::string test_plugin_dir(const std::string& name) {
  return std::string(TESSERA_BINARY_DIR) + "/test_plugins/" + name;
}

// Compiled against other SDK headers: refused from the file's ABI stamp,
// before the library is loaded, so not even its static constructor runs.
TEST(Registry, RefusesAPluginCompiledAgainstOtherSdkHeadersWithoutRunningIt) {
  ::unsetenv("TESSERA_TEST_REFUSED_PLUGIN_RAN");
  const auto registry =
      scanned_registry({test_plugin_dir("wrong_sdk"), test_plugin_dir("wrong_abi")});
  ASSERT_EQ(registry.rejected().size(), 2u);
  EXPECT_THAT(registry.rejected()[0].reason.message(),
              HasSubstr("was compiled against other tessera SDK headers (hash 00000000dead..."));
  EXPECT_EQ(::getenv("TESSERA_TEST_REFUSED_PLUGIN_RAN"), nullptr)
      << "a refused plugin's static constructor ran: it was loaded before it was checked";
}

TEST(Registry, RefusesALibraryWithoutAnAbiStamp) {
  const auto registry = scanned_registry({test_plugin_dir("no_stamp")});
  ASSERT_EQ(registry.rejected().size(), 1u);
  EXPECT_THAT(registry.rejected()[0].reason.message(),
              HasSubstr("carries no tessera ABI stamp (section .tessera_abi)"));
}

// A plugin whose create() makes an object of another kind is caught when the
// object is made, not used through the wrong interface.
TEST(Registry, RefusesAnObjectThatIsNotOfItsDeclaredKind) {
  const auto registry = scanned_registry({test_plugin_dir("wrong_kind")});
  auto record = registry.find("cache", "wrongkind");
  ASSERT_TRUE(record.ok()) << record.status().to_string();
  auto store = create_plugin<CacheStore>(registry, **record, OptionValues());
  ASSERT_FALSE(store.ok());
  EXPECT_THAT(store.status().message(),
              HasSubstr("declares kind 'cache', but the object its create() made is not a "
                        "CacheStore"));
}

TesseraPluginDescriptor valid_descriptor() {
  static const OptionSpec kOptions[] = {{"x", OptionType::kInt, "1", "an option", 0, 10}};
  TesseraPluginDescriptor d{};
  d.abi_major = TESSERA_ABI_MAJOR;
  d.abi_minor = TESSERA_ABI_MINOR;
  d.struct_size = sizeof(TesseraPluginDescriptor);
  d.build_fingerprint = TESSERA_BUILD_FINGERPRINT;
  d.sdk_hash = TESSERA_SDK_HASH;
  d.kind = "compressor";
  d.name = "test";
  d.version = "0";
  d.description = "";
  d.options = kOptions;
  d.option_count = 1;
  d.create = [](const OptionValues*, PluginServices*, Status* status) -> PluginObject* {
    *status = internal_error("not meant to be created");
    return nullptr;
  };
  return d;
}

TEST(Registry, DescriptorChecks) {
  EXPECT_TRUE(check_plugin_descriptor(valid_descriptor(), "x.so").ok());

  auto newer_minor = valid_descriptor();
  newer_minor.abi_minor = TESSERA_ABI_MINOR + 1;
  EXPECT_EQ(check_plugin_descriptor(newer_minor, "x.so").code(), StatusCode::kFailedPrecondition);

  auto small = valid_descriptor();
  small.struct_size = 8;
  EXPECT_THAT(check_plugin_descriptor(small, "x.so").message(), HasSubstr("too small"));

  auto other_stdlib = valid_descriptor();
  other_stdlib.build_fingerprint = "libc++17;clang-17";
  EXPECT_THAT(check_plugin_descriptor(other_stdlib, "x.so").message(),
              HasSubstr("standard library must match"));

  auto other_headers = valid_descriptor();
  other_headers.sdk_hash = "0123456789abcdef";
  EXPECT_THAT(check_plugin_descriptor(other_headers, "x.so").message(),
              HasSubstr("compiled against other tessera SDK headers (hash 0123456789ab..."));

  auto bad_kind = valid_descriptor();
  bad_kind.kind = "codec";
  EXPECT_THAT(check_plugin_descriptor(bad_kind, "x.so").message(), HasSubstr("unknown kind"));
}

TEST(Registry, BuiltInDescriptorsGoThroughTheSameChecks) {
  static const TesseraPluginDescriptor good = valid_descriptor();
  static TesseraPluginDescriptor bad = valid_descriptor();
  bad.abi_major = 42;
  bad.name = "bad";
  const TesseraPluginDescriptor* table[] = {&good, &bad};
  PluginRegistry registry(table);
  EXPECT_TRUE(registry.find("compressor", "test").ok());
  EXPECT_FALSE(registry.find("compressor", "bad").ok());
  ASSERT_EQ(registry.rejected().size(), 1u);
  // A failing create comes back as a status naming the plugin.
  auto object = registry.create(**registry.find("compressor", "test"), OptionValues());
  ASSERT_FALSE(object.ok());
  EXPECT_THAT(object.status().message(), HasSubstr("compressor plugin 'test'"));
}

}  // namespace
}  // namespace tessera
