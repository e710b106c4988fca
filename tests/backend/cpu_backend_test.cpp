#include "backends/cpu/cpu_backend.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "backends/cpu/cpu_kernels.h"

namespace tessera {
namespace {

TEST(CpuBackend, InitRejectsABadThreadCount) {
  CpuBackend backend;
  Status s = backend.init(BackendOptions{0});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("threads"), std::string::npos);
  EXPECT_FALSE(backend.init(BackendOptions{-3}).ok());
}

TEST(CpuBackend, DescribesItself) {
  CpuBackend backend;
  ASSERT_TRUE(backend.init(BackendOptions{2}).ok());
  const DeviceInfo info = backend.device_info();
  EXPECT_EQ(info.threads, 2);
  EXPECT_EQ(info.name, "cpu (2 threads)");
  EXPECT_FALSE(info.description.empty());
  ASSERT_TRUE(backend.init(BackendOptions{1}).ok());  // re-init changes the pool
  EXPECT_EQ(backend.device_info().threads, 1);
  EXPECT_TRUE(backend.supports_weight_dtype(DType::kF32));
  EXPECT_TRUE(backend.supports_weight_dtype(DType::kF16));
}

TEST(CpuBackend, AllocatesAlignedHostMemory) {
  CpuBackend backend;
  ASSERT_TRUE(backend.init(BackendOptions{1}).ok());
  for (std::size_t bytes : {std::size_t{0}, std::size_t{1}, std::size_t{100}, std::size_t{4096}}) {
    Result<std::unique_ptr<Buffer>> buffer = backend.allocate(bytes);
    ASSERT_TRUE(buffer.ok());
    EXPECT_EQ((*buffer)->size(), bytes);
    ASSERT_TRUE((*buffer)->is_host());
    EXPECT_EQ((*buffer)->usage(), BufferUsage::kActivations);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>((*buffer)->host_data()) % 64, 0u);
    std::memset((*buffer)->host_data(), 0xab, bytes);  // the memory is usable
  }
}

// The backend forwards to the kernels with its own pool.
TEST(CpuBackend, OpsRunTheKernels) {
  CpuBackend backend;
  ASSERT_TRUE(backend.init(BackendOptions{2}).ok());
  std::vector<float> x = {1, 2, 3, 4, 5, 6};  // [2, 3]
  std::vector<float> w = {1, 0, 0, 0, 1, 1};  // [2, 3]
  std::vector<float> out(4);
  backend.matmul(Tensor::contiguous(x.data(), DType::kF32, {2, 3}),
                 Tensor::contiguous(w.data(), DType::kF32, {2, 3}),
                 Tensor::contiguous(out.data(), DType::kF32, {2, 2}));
  EXPECT_EQ(out, (std::vector<float>{1, 5, 4, 11}));

  std::vector<float> sum(6);
  backend.add(Tensor::contiguous(x.data(), DType::kF32, {2, 3}),
              Tensor::contiguous(w.data(), DType::kF32, {2, 3}),
              Tensor::contiguous(sum.data(), DType::kF32, {2, 3}));
  EXPECT_EQ(sum, (std::vector<float>{2, 2, 3, 4, 6, 7}));

  std::vector<float> table = {0, 1, 10, 11, 20, 21};  // [3, 2]
  const std::vector<int32_t> tokens = {2, 0};
  std::vector<float> emb(4);
  backend.embedding(Tensor::contiguous(table.data(), DType::kF32, {3, 2}), tokens,
                    Tensor::contiguous(emb.data(), DType::kF32, {2, 2}));
  EXPECT_EQ(emb, (std::vector<float>{20, 21, 0, 1}));
}

}  // namespace
}  // namespace tessera
