// The Vulkan backend (backends/vulkan) op by op against the CPU reference,
// on whatever Vulkan device the machine has (lavapipe in CI), compared by
// normalised MSE (sum (a - b)^2 / sum b^2) with NaN/Inf checks. Built as its
// own program (tessera_vulkan_backend_test) only when the backend is (its own
// folder, so tessera_backend_test does not pick it up).

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "backends/vulkan/vulkan_backend.h"
#include "core/sampling/rng.h"
#include "core/tensor/block_quant.h"

namespace tessera {
namespace {

constexpr double kElementwiseTolerance = 1e-10;
constexpr double kQuantisedTolerance = 1e-6;
constexpr float kHidden = -std::numeric_limits<float>::infinity();

std::vector<float> random_values(std::size_t count, uint64_t seed, float scale = 1.0f) {
  Rng rng(seed);
  std::vector<float> v(count);
  for (float& x : v) x = static_cast<float>((rng.uniform() * 2.0 - 1.0) * scale);
  return v;
}

// sum (got - want)^2 / sum want^2 (0 when both are zero).
double nmse(const std::vector<float>& got, const std::vector<float>& want) {
  EXPECT_EQ(got.size(), want.size());
  double err = 0, norm = 0;
  for (std::size_t i = 0; i < std::min(got.size(), want.size()); ++i) {
    const double d = static_cast<double>(got[i]) - want[i];
    err += d * d;
    norm += static_cast<double>(want[i]) * want[i];
  }
  return norm == 0 ? err : err / norm;
}

bool all_finite(const std::vector<float>& v) {
  for (float x : v)
    if (!std::isfinite(x)) return false;
  return true;
}

// A tensor in the Vulkan backend's memory with the buffer that holds it.
struct DeviceTensor {
  std::unique_ptr<Buffer> buffer;
  Tensor tensor;
};

class VulkanBackendTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    // lavapipe on the CI machine's two cores (ctest sets it too).
    setenv("LP_NUM_THREADS", "2", /*overwrite=*/0);
    auto created = VulkanBackend::create("auto");
    if (!created.ok()) {
      skip_reason_ = new std::string(created.status().message());
      return;
    }
    BackendOptions options;
    options.threads = 2;
    vk_ = std::move(created).value().release();
    const Status status = vk_->init(options);
    if (!status.ok()) {
      skip_reason_ = new std::string(status.message());
      delete vk_;
      vk_ = nullptr;
      return;
    }
    cpu_ = new CpuBackend();
    ASSERT_TRUE(cpu_->init(options).ok());
  }
  static void TearDownTestSuite() {
    delete vk_;
    delete cpu_;
    delete skip_reason_;
    vk_ = nullptr;
    cpu_ = nullptr;
    skip_reason_ = nullptr;
  }
  void SetUp() override {
    if (vk_ == nullptr)
      GTEST_SKIP() << "no Vulkan device to test on: "
                   << (skip_reason_ ? *skip_reason_ : std::string("unknown"));
  }
  void TearDown() override {
    if (vk_ != nullptr) {
      const Status status = vk_->synchronize();
      EXPECT_TRUE(status.ok()) << "an op failed: " << status.message();
    }
  }

  static DeviceTensor on_device(const void* bytes, DType dtype,
                                std::initializer_list<int64_t> shape) {
    DeviceTensor d;
    Tensor probe = Tensor::contiguous(nullptr, dtype, shape);
    auto buffer = vk_->allocate(probe.bytes(), BufferUsage::kActivations);
    EXPECT_TRUE(buffer.ok()) << buffer.status().message();
    d.buffer = std::move(buffer).value();
    d.tensor = Tensor::in_buffer(*d.buffer, 0, dtype, shape);
    if (bytes != nullptr) {
      const Status s = vk_->write(d.tensor, {static_cast<const std::byte*>(bytes), probe.bytes()});
      EXPECT_TRUE(s.ok()) << s.message();
    }
    return d;
  }
  static DeviceTensor on_device(const std::vector<float>& v, std::initializer_list<int64_t> shape) {
    return on_device(v.data(), DType::kF32, shape);
  }
  static std::vector<float> download(const Tensor& t) {
    std::vector<float> v(static_cast<std::size_t>(t.elements()));
    const Status s = vk_->read(t, std::as_writable_bytes(std::span(v)));
    EXPECT_TRUE(s.ok()) << s.message();
    return v;
  }
  static Tensor host(std::vector<float>& v, std::initializer_list<int64_t> shape) {
    return Tensor::contiguous(v.data(), DType::kF32, shape);
  }

  static VulkanBackend* vk_;
  static CpuBackend* cpu_;
  static std::string* skip_reason_;
};

VulkanBackend* VulkanBackendTest::vk_ = nullptr;
CpuBackend* VulkanBackendTest::cpu_ = nullptr;
std::string* VulkanBackendTest::skip_reason_ = nullptr;

#define EXPECT_MATCHES(got, want, tolerance, what)                          \
  do {                                                                      \
    EXPECT_TRUE(all_finite(got)) << what << ": NaN or Inf from the device"; \
    EXPECT_LE(nmse(got, want), tolerance) << what;                          \
  } while (0)

TEST_F(VulkanBackendTest, DescribesItsDevices) {
  const DeviceInfo info = vk_->device_info();
  EXPECT_EQ(info.kind, "vulkan");
  EXPECT_FALSE(info.host_memory);
  EXPECT_FALSE(info.name.empty());
  EXPECT_GT(info.memory_bytes, 0u);
  EXPECT_GT(info.subgroup_size, 0);
  EXPECT_GT(info.max_binding_bytes, 0u);
  EXPECT_FALSE(vk_->devices().empty());
  EXPECT_TRUE(vk_->supports_op(BackendOp::kMatmul, DType::kQ4_K));
  EXPECT_TRUE(vk_->supports_op(BackendOp::kMaskedAttention, DType::kF32));
  EXPECT_TRUE(vk_->supports_op(BackendOp::kAttention, DType::kF32));
  EXPECT_FALSE(vk_->supports_op(BackendOp::kAdd, DType::kF16));
}

TEST_F(VulkanBackendTest, ChoosesDevicesByIndexAndName) {
  const std::vector<DeviceInfo> devices = vk_->devices();
  auto by_index = VulkanBackend::create("0");
  ASSERT_TRUE(by_index.ok()) << by_index.status().message();
  EXPECT_EQ(by_index.value()->device_info().name, devices[0].name);
  // Part of the name, in another case.
  std::string part = devices[0].name.substr(0, std::min<std::size_t>(4, devices[0].name.size()));
  for (char& c : part) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  auto by_name = VulkanBackend::create(part);
  ASSERT_TRUE(by_name.ok()) << by_name.status().message();
  EXPECT_EQ(by_name.value()->device_info().name, devices[0].name);

  auto none = VulkanBackend::create("no-such-device-anywhere");
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), StatusCode::kNotFound);
  EXPECT_NE(none.status().message().find("devices found"), std::string::npos)
      << none.status().message();
  EXPECT_NE(none.status().message().find(devices[0].name), std::string::npos)
      << none.status().message();
  auto past = VulkanBackend::create(std::to_string(devices.size()));
  ASSERT_FALSE(past.ok());
  EXPECT_NE(past.status().message().find(devices[0].name), std::string::npos);
}

TEST_F(VulkanBackendTest, ExplainsAMissingDriver) {
  // The loader with no driver to find (both names of its variable).
  const char* old_files = std::getenv("VK_ICD_FILENAMES");
  const char* old_drivers = std::getenv("VK_DRIVER_FILES");
  const std::string saved_files = old_files ? old_files : "",
                    saved_drivers = old_drivers ? old_drivers : "";
  setenv("VK_ICD_FILENAMES", "/nonexistent/tessera_icd.json", 1);
  setenv("VK_DRIVER_FILES", "/nonexistent/tessera_icd.json", 1);
  auto none = VulkanBackend::create("auto");
  if (old_files)
    setenv("VK_ICD_FILENAMES", saved_files.c_str(), 1);
  else
    unsetenv("VK_ICD_FILENAMES");
  if (old_drivers)
    setenv("VK_DRIVER_FILES", saved_drivers.c_str(), 1);
  else
    unsetenv("VK_DRIVER_FILES");
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), StatusCode::kFailedPrecondition) << none.status().message();
  EXPECT_NE(none.status().message().find("mesa-vulkan-drivers"), std::string::npos)
      << none.status().message();
}

TEST_F(VulkanBackendTest, WritesReadsAndCopies) {
  const std::vector<float> values = random_values(1001, 1);
  DeviceTensor a = on_device(values, {7, 143});
  EXPECT_EQ(a.buffer->host_data(), nullptr);
  EXPECT_FALSE(a.tensor.on_host());
  EXPECT_EQ(download(a.tensor), values);

  // Device to device, into the middle of a larger buffer.
  auto big = vk_->allocate(4 * 2000, BufferUsage::kKV);
  ASSERT_TRUE(big.ok());
  Tensor middle = Tensor::in_buffer(*big.value(), 4 * 500, DType::kF32, {1001});
  ASSERT_TRUE(vk_->copy(a.tensor, middle).ok());
  EXPECT_EQ(download(middle), values);
  // Host to device and device to host.
  std::vector<float> twice(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) twice[i] = 2 * values[i];
  ASSERT_TRUE(vk_->copy(host(twice, {1001}), middle).ok());
  std::vector<float> back(values.size());
  ASSERT_TRUE(vk_->copy(middle, host(back, {1001})).ok());
  EXPECT_EQ(back, twice);
  // A transfer larger than the staging chunk (16 MiB) goes in pieces.
  const std::vector<float> large = random_values((std::size_t{40} << 20) / 4 + 3, 2);
  DeviceTensor l = on_device(large, {static_cast<int64_t>(large.size())});
  EXPECT_EQ(download(l.tensor), large);

  // Wrong sizes and element counts are refused.
  EXPECT_FALSE(vk_->write(a.tensor, std::as_bytes(std::span(values).subspan(1))).ok());
  EXPECT_FALSE(vk_->copy(a.tensor, Tensor::in_buffer(*big.value(), 0, DType::kF32, {1000})).ok());
}

TEST_F(VulkanBackendTest, ElementwiseOpsMatchTheCpu) {
  const int64_t n = 7, d = 1001;  // not a multiple of any workgroup
  const std::size_t count = static_cast<std::size_t>(n * d);
  std::vector<float> a = random_values(count, 3, 4.0f), b = random_values(count, 4, 4.0f);
  // Gates far out, where tanh and exp saturate.
  a[0] = 40.0f, a[1] = -40.0f, a[2] = 95.0f, a[3] = -95.0f;
  std::vector<float> bias = random_values(static_cast<std::size_t>(d), 5);
  DeviceTensor da = on_device(a, {n, d}), db = on_device(b, {n, d});
  DeviceTensor dbias = on_device(bias, {d});
  DeviceTensor dout = on_device(nullptr, DType::kF32, {n, d});
  std::vector<float> want(count);
  const auto check = [&](const char* what) {
    EXPECT_MATCHES(download(dout.tensor), want, kElementwiseTolerance, what);
  };
  vk_->add(da.tensor, db.tensor, dout.tensor);
  cpu_->add(host(a, {n, d}), host(b, {n, d}), host(want, {n, d}));
  check("add");
  vk_->add_bias(da.tensor, dbias.tensor, dout.tensor);
  cpu_->add_bias(host(a, {n, d}), host(bias, {d}), host(want, {n, d}));
  check("add_bias");
  vk_->scale(da.tensor, 0.37f, dout.tensor);
  cpu_->scale(host(a, {n, d}), 0.37f, host(want, {n, d}));
  check("scale");
  vk_->swiglu(da.tensor, db.tensor, dout.tensor);
  cpu_->swiglu(host(a, {n, d}), host(b, {n, d}), host(want, {n, d}));
  check("swiglu");
  vk_->geglu(da.tensor, db.tensor, dout.tensor);
  cpu_->geglu(host(a, {n, d}), host(b, {n, d}), host(want, {n, d}));
  check("geglu");
  // In place: out aliases a.
  vk_->add(da.tensor, db.tensor, da.tensor);
  cpu_->add(host(a, {n, d}), host(b, {n, d}), host(want, {n, d}));
  EXPECT_MATCHES(download(da.tensor), want, kElementwiseTolerance, "add in place");
}

TEST_F(VulkanBackendTest, RmsNormMatchesTheCpu) {
  for (const int64_t n : {1, 7})
    for (const int64_t d : {33, 4096}) {
      const std::size_t count = static_cast<std::size_t>(n * d);
      std::vector<float> x = random_values(count, 6, 3.0f);
      std::vector<float> w = random_values(static_cast<std::size_t>(d), 7);
      DeviceTensor dx = on_device(x, {n, d}), dw = on_device(w, {d});
      DeviceTensor dout = on_device(nullptr, DType::kF32, {n, d});
      std::vector<float> want(count);
      vk_->rms_norm(dx.tensor, dw.tensor, 1e-5f, dout.tensor);
      cpu_->rms_norm(host(x, {n, d}), host(w, {d}), 1e-5f, host(want, {n, d}));
      EXPECT_MATCHES(download(dout.tensor), want, kElementwiseTolerance,
                     "rms_norm n=" << n << " d=" << d);
    }
}

TEST_F(VulkanBackendTest, RopeMatchesTheCpuInEveryForm) {
  const int64_t n = 7, heads = 3;
  const std::vector<int32_t> positions = {0, 1, 2, 17, 511, 5000, 131071};
  for (const int64_t head_dim : {64, 128})
    for (const RopePairs pairs : {RopePairs::kAdjacent, RopePairs::kHalves})
      for (const bool scaled : {false, true}) {
        std::vector<float> factors = random_values(static_cast<std::size_t>(head_dim / 2), 8);
        for (float& f : factors) f = 1.0f + 4.0f * std::abs(f);
        RopeSpec rope;
        rope.theta = scaled ? 500000.0f : 10000.0f;
        rope.pairs = pairs;
        if (scaled) {
          rope.position_scale = 0.125f;
          rope.freq_factors = factors;
        }
        const std::size_t count = static_cast<std::size_t>(n * heads * head_dim);
        std::vector<float> x = random_values(count, 9);
        DeviceTensor dx = on_device(x, {n, heads, head_dim});
        vk_->rope(dx.tensor, positions, rope);
        cpu_->rope(host(x, {n, heads, head_dim}), positions, rope);
        EXPECT_MATCHES(download(dx.tensor), x, kElementwiseTolerance,
                       "rope head_dim=" << head_dim << " halves=" << (pairs == RopePairs::kHalves)
                                        << " scaled=" << scaled);
      }
}

// A forward's layers turn q and k at the same positions: the angles are
// computed and uploaded once per submission, keyed by what they hold (a
// factor changed in place behind the same span is a new table), and every
// rotation still equals the CPU's.
TEST_F(VulkanBackendTest, RopeAnglesAreUploadedOncePerForward) {
  ASSERT_TRUE(vk_->synchronize().ok());
  const int64_t n = 5, heads = 2, head_dim = 64;
  const std::vector<int32_t> positions = {3, 4, 5, 6, 7};
  std::vector<float> factors(static_cast<std::size_t>(head_dim / 2), 2.0f);
  RopeSpec rope;
  rope.pairs = RopePairs::kHalves;
  rope.freq_factors = factors;
  const std::size_t count = static_cast<std::size_t>(n * heads * head_dim);
  std::vector<std::vector<float>> xs;
  std::vector<DeviceTensor> ds;
  for (uint64_t layer = 0; layer < 6; ++layer) {
    xs.push_back(random_values(count, 40 + layer));
    ds.push_back(on_device(xs.back(), {n, heads, head_dim}));
  }
  const uint64_t before = vk_->rope_tables_uploaded();
  for (std::size_t i = 0; i < 4; ++i) vk_->rope(ds[i].tensor, positions, rope);
  EXPECT_EQ(vk_->rope_tables_uploaded() - before, 1u) << "four calls at one set of positions";
  factors[7] = 3.0f;  // same span, other contents
  vk_->rope(ds[4].tensor, positions, rope);
  EXPECT_EQ(vk_->rope_tables_uploaded() - before, 2u) << "a factor changed in place";
  const std::vector<int32_t> later = {8, 9, 10, 11, 12};
  vk_->rope(ds[5].tensor, later, rope);
  EXPECT_EQ(vk_->rope_tables_uploaded() - before, 3u) << "other positions";
  for (std::size_t i = 0; i < ds.size(); ++i) {
    factors[7] = i < 4 ? 2.0f : 3.0f;
    cpu_->rope(host(xs[i], {n, heads, head_dim}), i < 5 ? positions : later, rope);
    EXPECT_MATCHES(download(ds[i].tensor), xs[i], kElementwiseTolerance, "layer " << i);
  }
  vk_->rope(ds[0].tensor, positions, rope);
  EXPECT_EQ(vk_->rope_tables_uploaded() - before, 4u) << "a new submission uploads anew";
}

// Weights of `dtype` from seeded values, in the GGUF layout.
std::vector<uint8_t> weights_of(DType dtype, int64_t rows, int64_t cols, uint64_t seed) {
  const std::vector<float> values = random_values(static_cast<std::size_t>(rows * cols), seed);
  std::vector<uint8_t> bytes(dtype_row_bytes(dtype, rows * cols));
  quantize_row(dtype, values.data(), rows * cols, bytes.data());
  return bytes;
}

TEST_F(VulkanBackendTest, EmbeddingMatchesTheCpuForEveryDType) {
  const int64_t vocab = 37, dim = 512;
  const std::vector<int32_t> tokens = {0, 36, 5, 5, 17, 1, 30};
  const int64_t n = static_cast<int64_t>(tokens.size());
  for (const DType dtype : kAllDTypes) {
    std::vector<uint8_t> table = weights_of(dtype, vocab, dim, 10);
    DeviceTensor dt = on_device(table.data(), dtype, {vocab, dim});
    DeviceTensor dout = on_device(nullptr, DType::kF32, {n, dim});
    std::vector<float> want(static_cast<std::size_t>(n * dim));
    vk_->embedding(dt.tensor, tokens, dout.tensor);
    cpu_->embedding(Tensor::contiguous(table.data(), dtype, {vocab, dim}), tokens,
                    host(want, {n, dim}));
    EXPECT_MATCHES(download(dout.tensor), want, kElementwiseTolerance,
                   "embedding " << dtype_name(dtype));
  }
}

TEST_F(VulkanBackendTest, MatmulMatchesTheCpuForEveryDType) {
  const int64_t m = 33;
  for (const DType dtype : kAllDTypes) {
    const int64_t block = dtype_layout(dtype).block_elements;
    // k past one workgroup's share of blocks, and a tail.
    const std::vector<int64_t> ks = block == 1    ? std::vector<int64_t>{97, 4096}
                                    : block == 32 ? std::vector<int64_t>{96, 32 * 70}
                                                  : std::vector<int64_t>{256, 256 * 18};
    for (const int64_t k : ks)
      for (const int64_t n : {1, 7, 9}) {
        std::vector<uint8_t> w = weights_of(dtype, m, k, 11);
        std::vector<float> x = random_values(static_cast<std::size_t>(n * k), 12);
        DeviceTensor dw = on_device(w.data(), dtype, {m, k});
        DeviceTensor dx = on_device(x, {n, k});
        DeviceTensor dout = on_device(nullptr, DType::kF32, {n, m});
        std::vector<float> want(static_cast<std::size_t>(n * m));
        vk_->matmul(dx.tensor, dw.tensor, dout.tensor);
        cpu_->matmul(host(x, {n, k}), Tensor::contiguous(w.data(), dtype, {m, k}),
                     host(want, {n, m}));
        EXPECT_MATCHES(download(dout.tensor), want,
                       block == 1 ? kElementwiseTolerance : kQuantisedTolerance,
                       "matmul " << dtype_name(dtype) << " n=" << n << " k=" << k);
      }
  }
}

TEST_F(VulkanBackendTest, BindsWeightsPastTheLargestBindingInPieces) {
  const uint64_t limit = vk_->device_info().max_binding_bytes;
  const int64_t k = 1024;
  const int64_t m = static_cast<int64_t>(limit / (k * 4)) + 3;  // f32 rows just past it
  if (static_cast<uint64_t>(m) * k * 4 > (uint64_t{1} << 30))
    GTEST_SKIP() << "the device's largest binding (" << limit
                 << " bytes) is too large to pass here";
  std::vector<float> w = random_values(static_cast<std::size_t>(m * k), 13);
  DeviceTensor dw = on_device(w, {m, k});
  w.resize(w.size());
  std::vector<float> x = random_values(static_cast<std::size_t>(2 * k), 14);
  DeviceTensor dx = on_device(x, {2, k});
  DeviceTensor dout = on_device(nullptr, DType::kF32, {2, m});
  std::vector<float> want(static_cast<std::size_t>(2 * m));
  vk_->matmul(dx.tensor, dw.tensor, dout.tensor);
  cpu_->matmul(host(x, {2, k}), host(w, {m, k}), host(want, {2, m}));
  EXPECT_MATCHES(download(dout.tensor), want, kElementwiseTolerance, "matmul in pieces");
  // Rows on both sides of the cut, through embedding.
  const std::vector<int32_t> tokens = {0, static_cast<int32_t>(m - 1), static_cast<int32_t>(m / 2)};
  DeviceTensor rows = on_device(nullptr, DType::kF32, {3, k});
  vk_->embedding(dw.tensor, tokens, rows.tensor);
  std::vector<float> want_rows(static_cast<std::size_t>(3 * k));
  cpu_->embedding(host(w, {m, k}), tokens, host(want_rows, {3, k}));
  EXPECT_EQ(download(rows.tensor), want_rows);
}

TEST_F(VulkanBackendTest, MaskedAttentionMatchesTheCpu) {
  const int64_t n = 5, kv_heads = 2, slots = 37;
  for (const int64_t heads : {2, 8})  // plain and GQA 4:1
    for (const int64_t head_dim : {64, 128}) {
      const int64_t width = slots + n;
      std::vector<float> q = random_values(static_cast<std::size_t>(n * heads * head_dim), 15);
      std::vector<float> ck =
          random_values(static_cast<std::size_t>(kv_heads * slots * head_dim), 16);
      std::vector<float> cv = random_values(ck.size(), 17);
      std::vector<float> bk = random_values(static_cast<std::size_t>(n * kv_heads * head_dim), 18);
      std::vector<float> bv = random_values(bk.size(), 19);
      std::vector<float> mask(static_cast<std::size_t>(n * width), 0.0f);
      Rng rng(20);
      for (int64_t i = 0; i < n; ++i)
        for (int64_t c = 0; c < width; ++c)
          if (c < 5 || rng.uniform() < 0.4 || i == 3)
            mask[static_cast<std::size_t>(i * width + c)] = kHidden;
      // Slots 0-4 are hidden from every query, so never read: NaN there must
      // not reach the output.
      for (int64_t h = 0; h < kv_heads; ++h)
        for (int64_t c = 0; c < 5; ++c) {
          ck[static_cast<std::size_t>((h * slots + c) * head_dim + 1)] = std::nanf("");
          cv[static_cast<std::size_t>((h * slots + c) * head_dim + 2)] = std::nanf("");
        }
      DeviceTensor dq = on_device(q, {n, heads, head_dim});
      DeviceTensor dck = on_device(ck, {kv_heads, slots, head_dim});
      DeviceTensor dcv = on_device(cv, {kv_heads, slots, head_dim});
      DeviceTensor dbk = on_device(bk, {n, kv_heads, head_dim});
      DeviceTensor dbv = on_device(bv, {n, kv_heads, head_dim});
      DeviceTensor dmask = on_device(mask, {n, width});
      DeviceTensor dout = on_device(nullptr, DType::kF32, {n, heads, head_dim});
      MaskedAttentionParams p{dq.tensor,  dck.tensor,   dcv.tensor, dbk.tensor,
                              dbv.tensor, dmask.tensor, dout.tensor};
      vk_->masked_attention(p);
      std::vector<float> want(q.size());
      MaskedAttentionParams hp{
          host(q, {n, heads, head_dim}),         host(ck, {kv_heads, slots, head_dim}),
          host(cv, {kv_heads, slots, head_dim}), host(bk, {n, kv_heads, head_dim}),
          host(bv, {n, kv_heads, head_dim}),     host(mask, {n, width}),
          host(want, {n, heads, head_dim})};
      cpu_->masked_attention(hp);
      const std::vector<float> got = download(dout.tensor);
      // Query 3 sees nothing: zeros.
      for (int64_t e = 0; e < heads * head_dim; ++e)
        ASSERT_EQ(got[static_cast<std::size_t>(3 * heads * head_dim + e)], 0.0f);
      EXPECT_MATCHES(got, want, kElementwiseTolerance,
                     "masked_attention heads=" << heads << " head_dim=" << head_dim);
    }
}

TEST_F(VulkanBackendTest, CacheUpdateMatchesTheCpu) {
  const int64_t kv_heads = 2, slots = 11, head_dim = 64, n = 3;
  std::vector<float> cache =
      random_values(static_cast<std::size_t>(kv_heads * slots * head_dim), 21);
  std::vector<float> keep(static_cast<std::size_t>(slots), 1.0f);
  std::vector<float> insert(static_cast<std::size_t>(slots * n), 0.0f);
  std::vector<float> rows = random_values(static_cast<std::size_t>(n * kv_heads * head_dim), 22);
  keep[2] = keep[5] = keep[9] = keep[10] = 0.0f;
  insert[2 * n + 0] = 1.0f;               // slot 2 <- row 0
  insert[5 * n + 2] = 1.0f;               // slot 5 <- row 2
  insert[9 * n + 1] = 1.0f;               // slot 9 <- row 1; slot 10 dropped, given nothing
  for (int64_t h = 0; h < kv_heads; ++h)  // a dropped slot's old contents are never read
    cache[static_cast<std::size_t>((h * slots + 10) * head_dim + 3)] = std::nanf("");
  DeviceTensor dc = on_device(cache, {kv_heads, slots, head_dim});
  DeviceTensor dk = on_device(keep, {slots});
  DeviceTensor di = on_device(insert, {slots, n});
  DeviceTensor dr = on_device(rows, {n, kv_heads, head_dim});
  vk_->cache_update(dc.tensor, dk.tensor, di.tensor, dr.tensor);
  cpu_->cache_update(host(cache, {kv_heads, slots, head_dim}), host(keep, {slots}),
                     host(insert, {slots, n}), host(rows, {n, kv_heads, head_dim}));
  EXPECT_MATCHES(download(dc.tensor), cache, kElementwiseTolerance, "cache_update");
}

// ---- attention over stored K/V on the host ----

// One sequence of an attention case: `stored` entries at positions 0.. in
// `segments` runs (with their branches, or none), then `batch` tokens at
// positions stored + their depth in the batch's tree (parents: -1 a root,
// else an earlier token of the sequence; empty: a chain, causal).
struct AttentionSequence {
  int64_t stored = 0;
  int segments = 1;
  std::vector<BranchId> stored_branches;  // empty: none (the shared prefix)
  int64_t batch = 0;
  std::vector<BranchId> batch_branches;  // empty: 0
  std::vector<int> parents;
  bool blind = false;  // its tokens see no batch key (not even their own)
};

struct AttentionCaseSpec {
  const char* label = "";
  int64_t heads = 1, kv_heads = 1, head_dim = 64;
  std::vector<AttentionSequence> sequences;
  WindowRule rule{};
  StoredKeys stored_keys = StoredKeys::kRotated;
  RopePairs pairs = RopePairs::kAdjacent;
  bool freq_factors = false;
  // batch_k and batch_v as views of one [n, 2 kv_heads, head_dim] tensor
  // (k heads first), as a fused projection would leave them.
  bool strided_batch = false;
  uint64_t seed = 1;
};

// The stored K/V of a sequence, [kv_heads, stored, head_dim], segments over it.
struct StoredKV {
  std::vector<float> k, v;
  std::vector<int32_t> positions;
  std::vector<BranchId> branches;
  std::vector<KVSegment> segments;
};

// Runs the case on both backends; returns the NMSE (and checks the tokens
// expected to see nothing got zeros).
double run_attention_case(VulkanBackend& vk, CpuBackend& cpu, const AttentionCaseSpec& c,
                          std::vector<float>* got_out = nullptr) {
  const int64_t hd = c.head_dim, kv = c.kv_heads;
  std::vector<StoredKV> stored(c.sequences.size());
  std::vector<int32_t> positions, view_of;
  std::vector<BranchId> branches;
  std::vector<int64_t> first_of;  // each sequence's first batch token
  std::vector<int64_t> parent_of;
  std::vector<bool> blind;
  uint64_t seed = c.seed * 1000;
  for (std::size_t s = 0; s < c.sequences.size(); ++s) {
    const AttentionSequence& seq = c.sequences[s];
    StoredKV& kvs = stored[s];
    const int64_t m = seq.stored;
    kvs.k = random_values(static_cast<std::size_t>(kv * m * hd), seed++, 2.0f);
    kvs.v = random_values(static_cast<std::size_t>(kv * m * hd), seed++);
    for (int64_t j = 0; j < m; ++j) kvs.positions.push_back(static_cast<int32_t>(j));
    kvs.branches = seq.stored_branches;
    const int parts = m == 0 ? 0 : std::min<int>(seq.segments, static_cast<int>(m));
    int64_t start = 0;
    for (int part = 0; part < parts; ++part) {
      const int64_t end = m * (part + 1) / parts;
      KVSegment seg;
      seg.count = end - start;
      seg.positions = kvs.positions.data() + start;
      seg.k = Tensor::contiguous(kvs.k.data() + start * hd, DType::kF32, {kv, seg.count, hd});
      seg.k.stride = {m * hd, hd, 1, 0};
      seg.v = Tensor::contiguous(kvs.v.data() + start * hd, DType::kF32, {kv, seg.count, hd});
      seg.v.stride = {m * hd, hd, 1, 0};
      if (!kvs.branches.empty()) seg.branches = kvs.branches.data() + start;
      kvs.segments.push_back(seg);
      start = end;
    }
    first_of.push_back(static_cast<int64_t>(positions.size()));
    std::vector<int> depth;
    for (int64_t i = 0; i < seq.batch; ++i) {
      const int parent =
          seq.parents.empty() ? static_cast<int>(i) - 1 : seq.parents[static_cast<std::size_t>(i)];
      depth.push_back(parent < 0 ? 0 : depth[static_cast<std::size_t>(parent)] + 1);
      positions.push_back(static_cast<int32_t>(m + depth.back()));
      view_of.push_back(static_cast<int32_t>(s));
      branches.push_back(seq.batch_branches.empty()
                             ? BranchId{0}
                             : seq.batch_branches[static_cast<std::size_t>(i)]);
      parent_of.push_back(parent < 0 ? -1 : first_of.back() + parent);
      blind.push_back(seq.blind);
    }
  }
  const int64_t n = static_cast<int64_t>(positions.size());
  std::vector<KVView> views;
  for (const StoredKV& kvs : stored) views.push_back(KVView{kvs.segments});
  // Each token sees itself and its ancestors (none when blind).
  const int64_t words = (n + 63) / 64;
  std::vector<uint64_t> mask(static_cast<std::size_t>(std::max<int64_t>(n * words, 1)), 0);
  for (int64_t i = 0; i < n; ++i) {
    if (blind[static_cast<std::size_t>(i)]) continue;
    for (int64_t j = i; j >= 0; j = parent_of[static_cast<std::size_t>(j)])
      mask[static_cast<std::size_t>(i * words + j / 64)] |= uint64_t{1} << (j % 64);
  }
  std::vector<float> factors;
  for (int64_t pair = 0; pair < hd / 2; ++pair)
    factors.push_back(1.0f + 0.25f * static_cast<float>(pair % 5));

  std::vector<float> q = random_values(static_cast<std::size_t>(n * c.heads * hd), seed++, 2.0f);
  std::vector<float> bk = random_values(static_cast<std::size_t>(n * kv * hd), seed++, 2.0f);
  std::vector<float> bv = random_values(bk.size(), seed++);
  std::vector<float> want(q.size(), 7.0f);
  AttentionParams ref;
  ref.q = Tensor::contiguous(q.data(), DType::kF32, {n, c.heads, hd});
  ref.batch_k = Tensor::contiguous(bk.data(), DType::kF32, {n, kv, hd});
  ref.batch_v = Tensor::contiguous(bv.data(), DType::kF32, {n, kv, hd});
  ref.positions = positions;
  ref.views = views;
  ref.view_of = view_of;
  ref.branches = branches;
  ref.in_batch = {mask, words};
  ref.rule = c.rule;
  ref.stored_keys = c.stored_keys;
  ref.rope = llama_rope(10000.0f);
  ref.rope.pairs = c.pairs;
  if (c.freq_factors) ref.rope.freq_factors = factors;
  ref.out = Tensor::contiguous(want.data(), DType::kF32, {n, c.heads, hd});
  cpu.attention(ref);

  auto device = [&](const std::vector<float>& v, std::initializer_list<int64_t> shape) {
    DeviceTensor d;
    Tensor probe = Tensor::contiguous(nullptr, DType::kF32, shape);
    d.buffer = vk.allocate(probe.bytes(), BufferUsage::kActivations).value();
    d.tensor = Tensor::in_buffer(*d.buffer, 0, DType::kF32, shape);
    if (!v.empty()) {
      EXPECT_TRUE(vk.write(d.tensor, std::as_bytes(std::span(v))).ok());
    }
    return d;
  };
  DeviceTensor dq = device(q, {n, c.heads, hd});
  DeviceTensor dout = device({}, {n, c.heads, hd});
  DeviceTensor dbk, dbv, dkv;
  AttentionParams p = ref;
  p.q = dq.tensor;
  p.out = dout.tensor;
  if (c.strided_batch) {
    // [n, 2 kv, hd]: token t's k heads, then its v heads.
    std::vector<float> fused(static_cast<std::size_t>(n * 2 * kv * hd));
    for (int64_t t = 0; t < n; ++t)
      for (int64_t e = 0; e < kv * hd; ++e) {
        fused[static_cast<std::size_t>(t * 2 * kv * hd + e)] =
            bk[static_cast<std::size_t>(t * kv * hd + e)];
        fused[static_cast<std::size_t>(t * 2 * kv * hd + kv * hd + e)] =
            bv[static_cast<std::size_t>(t * kv * hd + e)];
      }
    dkv = device(fused, {n, 2 * kv, hd});
    p.batch_k = Tensor::in_buffer(*dkv.buffer, 0, DType::kF32, {n, kv, hd});
    p.batch_k.stride = {2 * kv * hd, hd, 1, 0};
    p.batch_v = Tensor::in_buffer(*dkv.buffer, static_cast<std::size_t>(kv * hd) * sizeof(float),
                                  DType::kF32, {n, kv, hd});
    p.batch_v.stride = {2 * kv * hd, hd, 1, 0};
  } else {
    dbk = device(bk, {n, kv, hd});
    dbv = device(bv, {n, kv, hd});
    p.batch_k = dbk.tensor;
    p.batch_v = dbv.tensor;
  }
  vk.attention(p);
  const Status status = vk.synchronize();
  EXPECT_TRUE(status.ok()) << c.label << ": " << status.message();
  std::vector<float> got(q.size());
  EXPECT_TRUE(vk.read(dout.tensor, std::as_writable_bytes(std::span(got))).ok());
  for (int64_t i = 0; i < n; ++i)
    if (blind[static_cast<std::size_t>(i)] &&
        c.sequences[static_cast<std::size_t>(view_of[static_cast<std::size_t>(i)])].stored == 0)
      for (int64_t e = 0; e < c.heads * hd; ++e) {
        EXPECT_EQ(got[static_cast<std::size_t>(i * c.heads * hd + e)], 0.0f)
            << c.label << ": token " << i << " sees nothing";
        EXPECT_EQ(want[static_cast<std::size_t>(i * c.heads * hd + e)], 0.0f);
      }
  EXPECT_TRUE(all_finite(got)) << c.label;
  if (got_out != nullptr) *got_out = got;
  return nmse(got, want);
}

AttentionSequence plain(int64_t stored, int segments, int64_t batch) {
  AttentionSequence s;
  s.stored = stored;
  s.segments = segments;
  s.batch = batch;
  return s;
}

AttentionSequence branched(int64_t stored, int segments, std::vector<BranchId> stored_branches,
                           std::vector<BranchId> batch_branches, std::vector<int> parents) {
  AttentionSequence s = plain(stored, segments, static_cast<int64_t>(batch_branches.size()));
  s.stored_branches = std::move(stored_branches);
  s.batch_branches = std::move(batch_branches);
  s.parents = std::move(parents);
  return s;
}

AttentionCaseSpec spec(const char* label, int64_t heads, int64_t kv_heads, int64_t head_dim,
                       std::vector<AttentionSequence> sequences, uint64_t seed) {
  AttentionCaseSpec c;
  c.label = label;
  c.heads = heads;
  c.kv_heads = kv_heads;
  c.head_dim = head_dim;
  c.sequences = std::move(sequences);
  c.seed = seed;
  return c;
}

std::vector<AttentionCaseSpec> attention_case_specs() {
  std::vector<AttentionCaseSpec> cases;
  // GQA 1, one decode token over two segments.
  cases.push_back(spec("gqa1 hd64 n1", 4, 4, 64, {plain(20, 2, 1)}, 1));
  // GQA 2, two sequences, prefill of 7 tokens, the batch strided.
  {
    AttentionCaseSpec c = spec("gqa2 hd128 n7 two views, strided batch", 4, 2, 128,
                               {plain(9, 3, 3), plain(5, 1, 4)}, 2);
    c.strided_batch = true;
    cases.push_back(c);
  }
  // GQA 4: branches in the store and a tree in the batch (BIM), a blind
  // token with nothing stored, and a view no query reads.
  {
    AttentionSequence blind = plain(0, 1, 1);
    blind.blind = true;
    cases.push_back(spec(
        "gqa4 hd64 n7 branches, tree, blind token, unread view", 8, 2, 64,
        {branched(10, 2, {0, 0, 0, 0, 1, 1, 2, 2, 1, 2}, {1, 1, 2, 2, 1, 2}, {-1, 0, -1, 2, 1, 3}),
         plain(8, 1, 0), blind},
        3));
  }
  // A sink and a window (no reassign), GQA 2, head_dim 128.
  {
    AttentionCaseSpec c = spec("gqa2 hd128 n7 sink 4 window 8", 8, 4, 128, {plain(30, 3, 7)}, 4);
    c.rule = {4, 8, false};
    cases.push_back(c);
  }
  // Sinks moved (reassign): stored sinks turned per query.
  {
    AttentionCaseSpec c =
        spec("gqa2 hd64 n7 sink 2 window 4 reassign", 4, 2, 64, {plain(12, 2, 7)}, 5);
    c.rule = {2, 4, true};
    c.pairs = RopePairs::kHalves;
    cases.push_back(c);
  }
  // Reassign with the sinks in the batch (a long first prefill): the batch read back.
  {
    AttentionCaseSpec c =
        spec("gqa4 hd128 n7 batch sinks reassign", 8, 2, 128, {plain(0, 1, 7)}, 6);
    c.rule = {2, 3, true};
    cases.push_back(c);
  }
  // Keys kept before RoPE: halves, two views.
  {
    AttentionCaseSpec c =
        spec("gqa2 hd128 n7 keys before rope", 4, 2, 128, {plain(17, 2, 3), plain(4, 1, 4)}, 7);
    c.stored_keys = StoredKeys::kBeforeRope;
    c.pairs = RopePairs::kHalves;
    cases.push_back(c);
  }
  // Before RoPE with freq factors, reassign and a strided batch, one token.
  {
    AttentionCaseSpec c =
        spec("gqa1 hd64 n1 before rope, reassign, freq factors", 2, 2, 64, {plain(25, 3, 1)}, 8);
    c.stored_keys = StoredKeys::kBeforeRope;
    c.rule = {2, 6, true};
    c.freq_factors = true;
    c.strided_batch = true;
    cases.push_back(c);
  }
  // Before RoPE with branches, a tree and a window.
  {
    AttentionCaseSpec c = spec("gqa4 hd64 n7 before rope, branches, window", 4, 1, 64,
                               {branched(14, 3, {0, 0, 0, 0, 0, 0, 1, 1, 2, 2, 1, 2, 1, 2},
                                         {1, 2, 1, 2, 1, 2, 1}, {-1, -1, 0, 1, 2, 3, 4})},
                               9);
    c.stored_keys = StoredKeys::kBeforeRope;
    c.rule = {1, 5, false};
    cases.push_back(c);
  }
  return cases;
}

TEST_F(VulkanBackendTest, AttentionOverHostViewsMatchesTheCpu) {
  EXPECT_TRUE(vk_->supports_op(BackendOp::kAttention, DType::kF32));
  double worst = 0;
  for (const AttentionCaseSpec& c : attention_case_specs()) {
    const double e = run_attention_case(*vk_, *cpu_, c);
    std::printf("attention %-56s NMSE %.3g\n", c.label, e);
    EXPECT_LE(e, kElementwiseTolerance) << c.label;
    worst = std::max(worst, e);
  }
  std::printf("attention: worst NMSE %.3g\n", worst);
  // Again, smaller after larger: the gathered buffers are reused.
  const AttentionCaseSpec again = attention_case_specs().front();
  EXPECT_LE(run_attention_case(*vk_, *cpu_, again), kElementwiseTolerance);
}

TEST_F(VulkanBackendTest, AttentionRefusesEncodedViews) {
  std::vector<float> q(2 * 64, 0.5f), out(q.size()), bk(q.size(), 0.25f);
  DeviceTensor dq = on_device(q, {2, 1, 64});
  DeviceTensor dbk = on_device(bk, {2, 1, 64});
  DeviceTensor dout = on_device(nullptr, DType::kF32, {2, 1, 64});
  const int32_t positions[2] = {4, 5}, view_of[2] = {0, 0};
  const int32_t stored_positions[4] = {0, 1, 2, 3};
  const uint8_t records[64] = {};
  const int dummy = 0;
  KVSegment seg;
  seg.count = 4;
  seg.positions = stored_positions;
  seg.codec = reinterpret_cast<const Compressor*>(&dummy);  // never called: refused first
  seg.k_records = records;
  seg.v_records = records;
  const KVView view{std::span<const KVSegment>(&seg, 1)};
  const uint64_t mask[2] = {1, 3};
  AttentionParams p;
  p.q = dq.tensor;
  p.batch_k = dbk.tensor;
  p.batch_v = dbk.tensor;
  p.out = dout.tensor;
  p.positions = positions;
  p.views = std::span<const KVView>(&view, 1);
  p.view_of = view_of;
  p.in_batch = {mask, 1};
  vk_->attention(p);
  const Status status = vk_->synchronize();
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.code(), StatusCode::kUnimplemented);
  EXPECT_NE(status.message().find("attention("), std::string::npos) << status.message();
  EXPECT_NE(status.message().find("encoded"), std::string::npos) << status.message();
}

TEST_F(VulkanBackendTest, AdoptedWeightsLiveOnTheDevice) {
  const int64_t m = 20, k = 256;
  std::vector<uint8_t> w = weights_of(DType::kQ4_K, m, k, 23);
  std::vector<uint8_t> copy = w;
  Tensor weight = Tensor::contiguous(copy.data(), DType::kQ4_K, {m, k});
  Tensor tied = weight;
  Tensor* list[] = {&weight, &tied};
  auto adopted = vk_->adopt_weights(list);
  ASSERT_TRUE(adopted.ok()) << adopted.status().message();
  EXPECT_EQ(adopted.value(), w.size());
  EXPECT_FALSE(weight.on_host());
  EXPECT_EQ(weight.buffer, tied.buffer);
  std::vector<float> x = random_values(static_cast<std::size_t>(3 * k), 24);
  DeviceTensor dx = on_device(x, {3, k});
  DeviceTensor dout = on_device(nullptr, DType::kF32, {3, m});
  vk_->matmul(dx.tensor, tied, dout.tensor);
  std::vector<float> want(static_cast<std::size_t>(3 * m));
  cpu_->matmul(host(x, {3, k}), Tensor::contiguous(w.data(), DType::kQ4_K, {m, k}),
               host(want, {3, m}));
  EXPECT_MATCHES(download(dout.tensor), want, kQuantisedTolerance, "matmul of adopted weights");
}

TEST_F(VulkanBackendTest, OpErrorsAreStickyUntilSynchronize) {
  // A malformed attention call (no batch K/V, no positions).
  std::vector<float> q(64, 0.0f), out(64, 0.0f);
  AttentionParams params;
  params.q = host(q, {1, 1, 64});
  params.out = host(out, {1, 1, 64});
  vk_->attention(params);
  // Then a host tensor where a device one is needed, and a bad block size.
  std::vector<float> a(16, 1.0f);
  DeviceTensor dout = on_device(nullptr, DType::kF32, {16});
  vk_->add(host(a, {16}), host(a, {16}), dout.tensor);
  const Status first = vk_->synchronize();
  ASSERT_FALSE(first.ok());
  EXPECT_EQ(first.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(first.message().find("attention"), std::string::npos) << first.message();
  EXPECT_NE(first.message().find("1 more failed op"), std::string::npos) << first.message();
  EXPECT_TRUE(vk_->synchronize().ok());  // cleared

  vk_->add(host(a, {16}), host(a, {16}), dout.tensor);
  const Status host_tensor = vk_->synchronize();
  ASSERT_FALSE(host_tensor.ok());
  EXPECT_NE(host_tensor.message().find("add(f32[16]"), std::string::npos) << host_tensor.message();
  EXPECT_NE(host_tensor.message().find("host memory"), std::string::npos) << host_tensor.message();

  // A tensor past the largest binding that is not a weight is refused, naming the limit.
  const uint64_t limit = vk_->device_info().max_binding_bytes;
  if (limit < (uint64_t{1} << 30)) {
    const int64_t count = static_cast<int64_t>(limit / 4) + 16;
    DeviceTensor huge = on_device(nullptr, DType::kF32, {count});
    vk_->scale(huge.tensor, 2.0f, huge.tensor);
    const Status too_large = vk_->synchronize();
    ASSERT_FALSE(too_large.ok());
    EXPECT_NE(too_large.message().find("maxStorageBufferRange"), std::string::npos)
        << too_large.message();
  }

  std::vector<uint8_t> w = weights_of(DType::kQ8_0, 4, 64, 25);
  DeviceTensor dw = on_device(w.data(), DType::kQ8_0, {4, 64});
  std::vector<float> x(2 * 48, 1.0f);
  DeviceTensor dx = on_device(x, {2, 48});
  DeviceTensor dm = on_device(nullptr, DType::kF32, {2, 4});
  Tensor w48 = dw.tensor;
  w48.shape[1] = 48;  // not a whole number of blocks
  vk_->matmul(dx.tensor, w48, dm.tensor);
  const Status blocks = vk_->synchronize();
  ASSERT_FALSE(blocks.ok());
  EXPECT_NE(blocks.message().find("blocks"), std::string::npos) << blocks.message();
}

TEST_F(VulkanBackendTest, RecordsOpsUntilTheHostNeedsAResult) {
  ASSERT_TRUE(vk_->synchronize().ok());
  const uint64_t before = vk_->submissions();
  const int64_t n = 5, d = 300;
  const std::vector<float> a = random_values(static_cast<std::size_t>(n * d), 30);
  const std::vector<float> b = random_values(static_cast<std::size_t>(n * d), 31);
  DeviceTensor da = on_device(a, {n, d});
  DeviceTensor db = on_device(b, {n, d});
  DeviceTensor dout = on_device(nullptr, DType::kF32, {n, d});
  std::vector<float> want(a.size()), twice(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    want[i] = (a[i] + b[i]) * 3.0f;
    twice[i] = 2 * a[i];
  }
  // Ops, writes of host data while work is pending, a device copy, and
  // buffers destroyed while recorded work uses them: nothing is submitted.
  {
    DeviceTensor tmp = on_device(nullptr, DType::kF32, {n, d});
    vk_->add(da.tensor, db.tensor, tmp.tensor);
    vk_->scale(tmp.tensor, 3.0f, tmp.tensor);
    ASSERT_TRUE(vk_->copy(tmp.tensor, dout.tensor).ok());
  }
  {
    DeviceTensor host_data = on_device(twice, {n, d});  // a write into the upload ring
    ASSERT_TRUE(vk_->copy(host_data.tensor, da.tensor).ok());
  }
  // Small host inputs (token ids, RoPE angles) go into the ring too.
  std::vector<float> table = random_values(static_cast<std::size_t>(16 * d), 32);
  DeviceTensor dt = on_device(table, {16, d});
  DeviceTensor emb = on_device(nullptr, DType::kF32, {3, d});
  const std::vector<int32_t> tokens = {3, 15, 0};
  vk_->embedding(dt.tensor, tokens, emb.tensor);
  DeviceTensor rot = on_device(nullptr, DType::kF32, {3, 2, 150});
  ASSERT_TRUE(vk_->copy(emb.tensor, Tensor::in_buffer(*rot.buffer, 0, DType::kF32, {3, d})).ok());
  RopeSpec rope;
  const std::vector<int32_t> positions = {0, 7, 300};
  vk_->rope(rot.tensor, positions, rope);
  EXPECT_EQ(vk_->submissions(), before) << "recorded ops were submitted before a result was read";
  // The host reads: one submission runs it all.
  EXPECT_EQ(download(dout.tensor), want);
  EXPECT_EQ(vk_->submissions(), before + 1);
  EXPECT_EQ(download(da.tensor), twice);
  std::vector<float> want_rot(static_cast<std::size_t>(3 * d));
  for (std::size_t t = 0; t < tokens.size(); ++t)
    std::copy_n(table.data() + tokens[t] * d, d,
                want_rot.data() + static_cast<std::ptrdiff_t>(t) * d);
  cpu_->rope(host(want_rot, {3, 2, 150}), positions, rope);
  EXPECT_MATCHES(download(rot.tensor), want_rot, kElementwiseTolerance, "embedding then rope");
  ASSERT_TRUE(vk_->synchronize().ok());
  EXPECT_EQ(vk_->submissions(), before + 1) << "nothing was pending";
  EXPECT_NE(vk_->device_info().description.find("submissions"), std::string::npos);

  // Host inputs past the first ring chunk, in one submission: every op
  // still reads its own.
  const int64_t big = 70000;  // positions * pairs * 8 bytes per call
  const std::vector<float> x = random_values(static_cast<std::size_t>(big * 2 * 4), 33);
  DeviceTensor dx = on_device(x, {big, 2, 4});
  std::vector<int32_t> pos(static_cast<std::size_t>(big));
  std::vector<float> want_x = x;
  for (int r = 0; r < 4; ++r) {
    for (int64_t i = 0; i < big; ++i)
      pos[static_cast<std::size_t>(i)] = static_cast<int32_t>((i * 7 + r) % 5000);
    vk_->rope(dx.tensor, pos, rope);
    cpu_->rope(host(want_x, {big, 2, 4}), pos, rope);
  }
  EXPECT_MATCHES(download(dx.tensor), want_x, kElementwiseTolerance, "rope four times");
  EXPECT_EQ(vk_->submissions(), before + 2);
}

// Not a check: what an op costs here, against the CPU backend (run with
// --gtest_also_run_disabled_tests). Each op is submitted and waited for.
TEST_F(VulkanBackendTest, DISABLED_MeasuresMatmul) {
  const int64_t m = 4096, k = 4096;
  for (const DType dtype :
       {DType::kF32, DType::kF16, DType::kQ8_0, DType::kQ4_0, DType::kQ4_K, DType::kQ6_K})
    for (const int64_t n : {1, 32}) {
      std::vector<uint8_t> w = weights_of(dtype, m, k, 26);
      std::vector<float> x = random_values(static_cast<std::size_t>(n * k), 27);
      DeviceTensor dw = on_device(w.data(), dtype, {m, k});
      DeviceTensor dx = on_device(x, {n, k});
      DeviceTensor dout = on_device(nullptr, DType::kF32, {n, m});
      std::vector<float> want(static_cast<std::size_t>(n * m));
      const auto time_ms = [](auto&& op) {
        op();  // pipelines, caches
        const int reps = 3;
        const auto start = std::chrono::steady_clock::now();
        for (int r = 0; r < reps; ++r) op();
        return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                   .count() /
               reps;
      };
      const double vk = time_ms([&] {
        vk_->matmul(dx.tensor, dw.tensor, dout.tensor);
        EXPECT_TRUE(vk_->synchronize().ok());
      });
      const Tensor hw = Tensor::contiguous(w.data(), dtype, {m, k});
      const double cpu = time_ms([&] { cpu_->matmul(host(x, {n, k}), hw, host(want, {n, m})); });
      std::printf("matmul %-5s [%lld x %lld] n=%-3lld vulkan %8.2f ms  cpu (2 threads) %8.2f ms\n",
                  std::string(dtype_name(dtype)).c_str(), static_cast<long long>(m),
                  static_cast<long long>(k), static_cast<long long>(n), vk, cpu);
      EXPECT_MATCHES(download(dout.tensor), want,
                     dtype_is_blocked(dtype) ? kQuantisedTolerance : kElementwiseTolerance,
                     "matmul " << dtype_name(dtype));
    }
}

}  // namespace
}  // namespace tessera
