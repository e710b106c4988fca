// Backend-owned weights (Backend::adopt_weights): the CPU backend's copy
// holds the same bytes, cache-line aligned, out of the file; tied tensors stay
// tied; the handover drops the model's hold on the mapping once the backend
// holds every weight; "mapped" leaves them in the file; a wrong placement is
// refused at init.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "core/engine/weight_handover.h"
#include "core/io/mapped_file.h"
#include "core/model/model.h"

namespace tessera {
namespace {

const std::string kStories = std::string(TESSERA_SHARED_DIR) + "/models/stories260K.gguf";

bool inside(const void* p, const MappedFile& file) {
  const auto* b = static_cast<const uint8_t*>(p);
  return b >= file.data() && b < file.data() + file.size();
}

std::unique_ptr<CpuBackend> cpu_backend(const std::string& weights) {
  auto backend = std::make_unique<CpuBackend>();
  BackendOptions options;
  options.weights = weights;
  EXPECT_TRUE(backend->init(options).ok());
  return backend;
}

TEST(BackendWeights, CopiedMovesEveryTensorOutOfTheFileAndKeepsTiedOnesTied) {
  auto model = load_model(kStories);
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  const bool tied = model->weights.output.data == model->weights.token_embedding.data;
  const std::shared_ptr<const MappedFile> file = model->file;  // kept to check against
  std::vector<std::vector<uint8_t>> before;
  for (const Tensor* t : weight_tensors(model->weights)) {
    const auto* p = static_cast<const uint8_t*>(t->data);
    before.emplace_back(p, p + t->bytes());
  }

  auto backend = cpu_backend("copied");
  ASSERT_TRUE(hand_weights_to(*backend, *model).ok());
  EXPECT_EQ(model->file, nullptr) << "the engine's hold on the mapping is dropped";
  std::size_t i = 0;
  for (const Tensor* t : weight_tensors(model->weights)) {
    EXPECT_FALSE(inside(t->data, *file));
    EXPECT_EQ(std::memcmp(t->data, before[i].data(), before[i].size()), 0) << "tensor " << i;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(t->data) % 64, 0u) << "tensor " << i;
    ++i;
  }
  EXPECT_EQ(model->weights.output.data == model->weights.token_embedding.data, tied);
}

TEST(BackendWeights, MappedLeavesThemInTheFile) {
  auto model = load_model(kStories);
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  auto backend = cpu_backend("mapped");
  ASSERT_TRUE(hand_weights_to(*backend, *model).ok());
  ASSERT_NE(model->file, nullptr);
  for (const Tensor* t : weight_tensors(model->weights)) EXPECT_TRUE(inside(t->data, *model->file));
}

TEST(BackendWeights, AnUnknownPlacementIsRefusedAtInit) {
  CpuBackend backend;
  BackendOptions options;
  options.weights = "gpu";
  const Status status = backend.init(options);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("auto, mapped, copied"), std::string::npos) << status.message();
}

}  // namespace
}  // namespace tessera
