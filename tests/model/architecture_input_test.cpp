// Architecture files a user can hand the loader that it must refuse clearly:
// an architecture it does not run, a tensor the architecture requires left
// out, head sizes the tensors contradict, half of qwen2's biases, a RoPE
// scaling it does not implement.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "core/model/model.h"
#include "tests/model/arch_models.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;

// The tiny model of `arch` rewritten as `name` with the given changes, loaded.
Status load_changed(const std::string& arch, const std::string& name,
                    const std::function<bool(const std::string&)>& drop,
                    const std::function<bool(GgufWriter&, const GgufKeyValue&)>& edit = {}) {
  const std::string out = testing::test_model_dir() + "/" + name + ".gguf";
  const Status written = testing::rewrite_gguf(testing::arch_model(arch), out, drop, edit);
  EXPECT_TRUE(written.ok()) << written.to_string();
  return load_model(out).status();
}

// An edit that sets key `key` to the u32 `value`.
std::function<bool(GgufWriter&, const GgufKeyValue&)> set_u32(const std::string& key,
                                                              uint32_t value) {
  return [=](GgufWriter& writer, const GgufKeyValue& kv) {
    if (kv.key != key) return true;
    writer.set_u32(key, value);
    return false;
  };
}

TEST(ArchitectureInput, AnUnknownArchitectureListsTheSupportedOnes) {
  const Status status = load_changed("llama", "arch-mamba", {}, [](GgufWriter& w, const auto& kv) {
    if (kv.key != "general.architecture") return true;
    w.set_string(kv.key, "mamba");
    return false;
  });
  EXPECT_EQ(status.code(), StatusCode::kUnimplemented);
  EXPECT_THAT(status.message(),
              HasSubstr("architecture 'mamba' is not supported (supported: llama, qwen2, qwen3, "
                        "gemma3)"));
}

TEST(ArchitectureInput, Qwen3WithoutItsQueryNormIsMissingThatTensor) {
  const Status status = load_changed("qwen3", "qwen3-no-q-norm", [](const std::string& name) {
    return name == "blk.1.attn_q_norm.weight";
  });
  EXPECT_EQ(status.code(), StatusCode::kDataLoss);
  EXPECT_THAT(status.message(),
              HasSubstr("missing tensor 'blk.1.attn_q_norm.weight' (expected shape [32]"));
}

TEST(ArchitectureInput, Gemma3WithoutItsPostNormsIsMissingThatTensor) {
  const Status status = load_changed("gemma3", "gemma3-no-post-ffw", [](const std::string& name) {
    return name == "blk.0.post_ffw_norm.weight";
  });
  EXPECT_EQ(status.code(), StatusCode::kDataLoss);
  EXPECT_THAT(status.message(), HasSubstr("missing tensor 'blk.0.post_ffw_norm.weight'"));
}

TEST(ArchitectureInput, AKeyLengthTheTensorsContradictNamesTheTensor) {
  // key_length and value_length agree, the tensors say 32.
  const auto key = set_u32("qwen3.attention.key_length", 48);
  const auto value = set_u32("qwen3.attention.value_length", 48);
  const Status status = load_changed(
      "qwen3", "qwen3-key-length-48", {},
      [&](GgufWriter& w, const GgufKeyValue& kv) { return key(w, kv) && value(w, kv); });
  EXPECT_EQ(status.code(), StatusCode::kDataLoss);
  EXPECT_THAT(status.message(), HasSubstr("tensor 'blk.0.attn_q.weight' has shape [128, 64], "
                                          "expected [192, 64]"));
}

TEST(ArchitectureInput, AValueLengthOtherThanTheKeyLengthIsRefused) {
  const Status status = load_changed("gemma3", "gemma3-value-length-16", {},
                                     set_u32("gemma3.attention.value_length", 16));
  EXPECT_EQ(status.code(), StatusCode::kDataLoss);
  EXPECT_THAT(status.message(), HasSubstr("gemma3.attention.value_length 16 differs from the key "
                                          "head size 32"));
}

TEST(ArchitectureInput, AZeroKeyLengthIsRefused) {
  const Status status =
      load_changed("qwen3", "qwen3-key-length-0", {}, set_u32("qwen3.attention.key_length", 0));
  EXPECT_EQ(status.code(), StatusCode::kDataLoss);
  EXPECT_THAT(status.message(), HasSubstr("key 'qwen3.attention.key_length' is 0"));
}

TEST(ArchitectureInput, Qwen2WithSomeBiasesOnlyIsRefused) {
  const Status status = load_changed("qwen2", "qwen2-q-bias-only", [](const std::string& name) {
    return name == "blk.2.attn_k.bias" || name == "blk.2.attn_v.bias";
  });
  EXPECT_EQ(status.code(), StatusCode::kDataLoss);
  EXPECT_THAT(status.message(), HasSubstr("layer 2 has some of attn_q.bias"));
}

TEST(ArchitectureInput, YarnScalingIsNotImplemented) {
  const Status status = load_changed("qwen3", "qwen3-yarn", {}, [](GgufWriter& w, const auto& kv) {
    if (kv.key == "qwen3.rope.freq_base") w.set_string("qwen3.rope.scaling.type", "yarn");
    return true;
  });
  EXPECT_EQ(status.code(), StatusCode::kUnimplemented);
  EXPECT_THAT(status.message(), HasSubstr("qwen3.rope.scaling.type is 'yarn'"));
}

TEST(ArchitectureInput, AnOutputBiasIsNotSilentlyIgnored) {
  const Status status = load_changed(
      "llama", "llama-attn-output-bias", {}, [](GgufWriter& w, const GgufKeyValue& kv) {
        if (kv.key == "general.name") {
          const float bias[64] = {};
          EXPECT_TRUE(w.add_tensor("blk.0.attn_output.bias", DType::kF32, {64}, bias).ok());
        }
        return true;
      });
  EXPECT_EQ(status.code(), StatusCode::kUnimplemented);
  EXPECT_THAT(status.message(), HasSubstr("tensor 'blk.0.attn_output.bias' is not supported"));
}

}  // namespace
}  // namespace tessera

namespace tessera {
namespace {

// What `tessera inspect` prints about the layers, read back from the files.
TEST(ArchitectureDescription, NamesEachArchitecturesLayerDifferences) {
  const std::map<std::string, std::string> want = {
      {"llama", "rope pairs adjacent, theta 10000"},
      {"llama3", "rope pairs adjacent, theta 500000, rope_freqs factors"},
      {"qwen2", "q/k/v bias, rope pairs halves, theta 1e+06"},
      {"qwen3", "q/k norm, rope pairs halves, theta 1e+06"},
      {"gemma3",
       "q/k norm, post norms, gelu-tanh gate, embedding x 8, rope pairs halves, theta 1e+06 x "
       "0.125; sliding window 4 on 2 of 4 layers (theta 10000)"},
  };
  for (const auto& [arch, text] : want) {
    auto model = load_model(testing::arch_model(arch));
    ASSERT_TRUE(model.ok()) << model.status().to_string();
    EXPECT_EQ(describe_layers(model->config), text) << arch;
  }
}

}  // namespace
}  // namespace tessera
