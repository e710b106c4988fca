// The built plugin libraries: each exports a descriptor whose manifest is
// right, and the objects they create work through CheckedCacheStore. Loaded
// with dlopen directly (not the registry) so only these plugins are under test.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>

#include "core/cache/checked_cache_store.h"
#include "core/plugin/abi.h"
#include "tests/cache/cache_test_util.h"

namespace tessera {
namespace {

// The descriptor of a built plugin, or null when the build linked it in
// (embedded build) or did not build it. The library stays loaded (objects
// created from it must not outlive their code).
const TesseraPluginDescriptor* load_descriptor(const std::string& id) {
  const std::string path = std::string(TESSERA_BUILD_PLUGIN_DIR) + "/libtessera_" + id + ".so";
  if (!std::filesystem::exists(path)) return nullptr;
  void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  EXPECT_NE(lib, nullptr) << dlerror();
  if (lib == nullptr) return nullptr;
  return static_cast<const TesseraPluginDescriptor*>(
      dlsym(lib, TESSERA_STRINGIFY(TESSERA_PLUGIN_SYMBOL)));
}

template <typename T>
std::unique_ptr<T> create(const TesseraPluginDescriptor& d) {
  OptionValues options;
  Status status;
  std::unique_ptr<PluginObject> object(d.create(&options, nullptr, &status));
  EXPECT_TRUE(status.ok()) << status.to_string();
  if (object == nullptr) return nullptr;
  auto* typed = dynamic_cast<T*>(object.get());
  EXPECT_NE(typed, nullptr) << d.kind << " '" << d.name << "' created the wrong type";
  if (typed == nullptr) return nullptr;
  object.release();
  return std::unique_ptr<T>(typed);
}

TEST(CachePlugins, ManifestsNameKindAndNoOptions) {
  const TesseraPluginDescriptor* cache = load_descriptor("cache_static");
  const TesseraPluginDescriptor* codec = load_descriptor("compressor_identity");
  if (cache == nullptr || codec == nullptr) GTEST_SKIP() << "plugins are linked in or not built";
  EXPECT_EQ(cache->abi_major, static_cast<uint32_t>(TESSERA_ABI_MAJOR));
  EXPECT_STREQ(cache->kind, "cache");
  EXPECT_STREQ(cache->name, "static");
  EXPECT_EQ(cache->option_count, 0u);
  EXPECT_STREQ(codec->kind, "compressor");
  EXPECT_STREQ(codec->name, "identity");
  EXPECT_EQ(codec->option_count, 0u);
}

TEST(CachePlugins, LoadedStoreAndCodecRoundTrip) {
  const TesseraPluginDescriptor* cache = load_descriptor("cache_static");
  const TesseraPluginDescriptor* codec = load_descriptor("compressor_identity");
  if (cache == nullptr || codec == nullptr) GTEST_SKIP() << "plugins are linked in or not built";
  std::unique_ptr<CacheStore> store = create<CacheStore>(*cache);
  std::unique_ptr<Compressor> compressor = create<Compressor>(*codec);
  ASSERT_NE(store, nullptr);
  ASSERT_NE(compressor, nullptr);
  EXPECT_TRUE(compressor->stores_raw_f32());

  const CacheGeometry g{2, 2, 8};
  test::CodecOwningStore checked(std::move(store), cache->name, std::move(compressor));
  ASSERT_TRUE(checked.init(g).ok());
  ASSERT_TRUE(checked.allocate(1, 8).ok());
  test::KVBatch b = test::make_batch(g, 0, 3, 0);
  ASSERT_TRUE(checked.append(1, b.positions, b.kt, b.vt).ok());
  test::RefCache ref{g, {}};
  ref.append(b);
  EXPECT_TRUE(test::views_match(checked, 1, ref));
}

}  // namespace
}  // namespace tessera
