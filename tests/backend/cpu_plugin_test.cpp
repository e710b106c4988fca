// The built plugin library: its descriptor and a backend created through it.
// (The registry's own tests cover discovery; this opens the file directly.)
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "core/plugin/sdk.h"

namespace tessera {
namespace {

TEST(CpuPlugin, DescriptorCreatesAWorkingBackend) {
  const std::string path = std::string(TESSERA_BUILD_PLUGIN_DIR) + "/libtessera_backend_cpu.so";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "no shared plugin (embedded build?)";
  // Never closed: the backend's vtable lives in the library.
  void* library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(library, nullptr) << dlerror();
  const auto* descriptor =
      static_cast<const TesseraPluginDescriptor*>(dlsym(library, "tessera_plugin_descriptor"));
  ASSERT_NE(descriptor, nullptr);
  EXPECT_EQ(descriptor->abi_major, TESSERA_ABI_MAJOR);
  EXPECT_EQ(std::string(descriptor->kind), "backend");
  EXPECT_EQ(std::string(descriptor->name), "cpu");
  EXPECT_EQ(descriptor->option_count, 0u);

  OptionValues options;
  Status status;
  std::unique_ptr<Backend> backend(
      static_cast<Backend*>(descriptor->create(&options, nullptr, &status)));
  ASSERT_NE(backend, nullptr) << status.to_string();
  ASSERT_TRUE(backend->init(BackendOptions{2}).ok());
  EXPECT_EQ(backend->device_info().threads, 2);

  std::vector<float> a = {1, 2, 3}, b = {10, 20, 30}, out(3);
  backend->add(Tensor::contiguous(a.data(), DType::kF32, {3}),
               Tensor::contiguous(b.data(), DType::kF32, {3}),
               Tensor::contiguous(out.data(), DType::kF32, {3}));
  EXPECT_EQ(out, (std::vector<float>{11, 22, 33}));
}

}  // namespace
}  // namespace tessera
