// The built codec plugins: each loads, its option schema parses from a
// config (defaults included), and the object it creates encodes at the size
// its options promise. Loaded with dlopen directly, as tests/cache does.
#include <dlfcn.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/compressor/compressor.h"
#include "core/config/config.h"
#include "core/plugin/abi.h"
#include "tests/codec/gaussian_vectors.h"

namespace tessera {
namespace {

const TesseraPluginDescriptor* load_descriptor(const std::string& id) {
  const std::string path = std::string(TESSERA_BUILD_PLUGIN_DIR) + "/libtessera_" + id + ".so";
  if (!std::filesystem::exists(path)) return nullptr;
  void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  EXPECT_NE(lib, nullptr) << dlerror();
  if (lib == nullptr) return nullptr;
  return static_cast<const TesseraPluginDescriptor*>(
      dlsym(lib, TESSERA_STRINGIFY(TESSERA_PLUGIN_SYMBOL)));
}

// The codec the config's [cache.codec] section describes, or the error.
Result<std::unique_ptr<Compressor>> create_from_config(const TesseraPluginDescriptor& d,
                                                       const std::string& codec_section) {
  auto config = Config::parse("[model]\npath = \"m\"\n[cache.codec]\nplugin = \"" +
                                  std::string(d.name) + "\"\n" + codec_section,
                              "codec.toml");
  if (!config.ok()) return config.status();
  ASSIGN_OR_RETURN(
      OptionValues options,
      config->plugin_options("cache.codec", std::span<const OptionSpec>(d.options, d.option_count),
                             "compressor plugin"));
  Status status;
  std::unique_ptr<PluginObject> object(d.create(&options, nullptr, &status));
  if (object == nullptr) return status;
  auto* codec = dynamic_cast<Compressor*>(object.get());
  if (codec == nullptr) return internal_error("not a Compressor");
  object.release();
  return std::unique_ptr<Compressor>(codec);
}

void expect_round_trip_close(const Compressor& codec, int dim, double tolerance) {
  const std::vector<float> x = test::GaussianSource(61).vectors(20, dim);
  std::vector<uint8_t> bytes(codec.encoded_bytes(20, dim));
  codec.encode(x.data(), 20, dim, bytes.data());
  std::vector<float> decoded(x.size());
  codec.decode(bytes.data(), 20, dim, decoded.data());
  EXPECT_LT(test::relative_mse(x, decoded), tolerance);
}

TEST(CodecPlugins, LatticeDefaultsAndOptions) {
  const TesseraPluginDescriptor* d = load_descriptor("compressor_lattice");
  if (d == nullptr) GTEST_SKIP() << "plugin is linked in or not built";
  EXPECT_STREQ(d->kind, "compressor");
  EXPECT_STREQ(d->name, "lattice");
  EXPECT_EQ(d->option_count, 3u);

  auto by_default = create_from_config(*d, "");
  ASSERT_TRUE(by_default.ok()) << by_default.status().to_string();
  EXPECT_DOUBLE_EQ((*by_default)->bits_per_vector(128), 832.0);  // E8, Q = 37
  expect_round_trip_close(**by_default, 128, 1e-3);

  auto d4 = create_from_config(*d, "lattice = \"D4\"\nq = 10\n");
  ASSERT_TRUE(d4.ok()) << d4.status().to_string();
  EXPECT_DOUBLE_EQ((*d4)->bits_per_vector(128), 576.0);
  expect_round_trip_close(**d4, 128, 2e-2);

  auto reference = create_from_config(*d, "clamp = \"reference\"\n");
  ASSERT_TRUE(reference.ok()) << reference.status().to_string();
  EXPECT_DOUBLE_EQ((*reference)->bits_per_vector(128), 16 * 58 + 32);

  auto bad = create_from_config(*d, "q = 0\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), ::testing::HasSubstr("q"));
  EXPECT_FALSE(create_from_config(*d, "lattice = \"A2\"\n").ok());
}

TEST(CodecPlugins, Int8AndInt4) {
  const TesseraPluginDescriptor* int8 = load_descriptor("compressor_int8");
  const TesseraPluginDescriptor* int4 = load_descriptor("compressor_int4");
  if (int8 == nullptr || int4 == nullptr) GTEST_SKIP() << "plugins are linked in or not built";
  EXPECT_EQ(int8->option_count, 0u);
  EXPECT_EQ(int4->option_count, 1u);

  auto a = create_from_config(*int8, "");
  ASSERT_TRUE(a.ok()) << a.status().to_string();
  EXPECT_DOUBLE_EQ((*a)->bits_per_vector(128), 1040.0);
  expect_round_trip_close(**a, 128, 1e-4);

  auto b = create_from_config(*int4, "");
  ASSERT_TRUE(b.ok()) << b.status().to_string();
  EXPECT_DOUBLE_EQ((*b)->bits_per_vector(128), 576.0);
  expect_round_trip_close(**b, 128, 2e-2);

  auto c = create_from_config(*int4, "group_size = 16\n");
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_DOUBLE_EQ((*c)->bits_per_vector(128), 512.0 + 16.0 * 8);
  EXPECT_FALSE(create_from_config(*int4, "group_size = 0\n").ok());
}

}  // namespace
}  // namespace tessera
