// Whole models on each backend under test (tests/backend/conformance's
// selection: --backend=NAME[,NAME], TESSERA_CONFORMANCE_BACKENDS, else every
// backend plugin found), against the same engine on the CPU backend:
// perplexity within 1e-4 relative and greedy text identical for 256 tokens
// (where it is not, the step and both tokens are printed); and, on the
// backend itself, speculative greedy decoding identical to plain decoding and
// BIM branches identical to batched ones.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "core/engine/perplexity.h"
#include "core/io/text_file.h"
#include "tests/backend/conformance/backends_under_test.h"
#include "tests/model/quantized_models.h"
#include "tests/support/shared_model_engine.h"

namespace tessera {
namespace {

using testing::kSharedModels;
using testing::quantized;

// The weight files: stories260K as f32, f16, q8_0 and Q4_K_M, and the 1M
// target the 260K model drafts for.
std::vector<std::string> model_files() {
  const std::string stories = kSharedModels + "stories260K.gguf";
  return {stories, quantized(stories, "f16", "stories260K"),
          quantized(stories, "q8_0", "stories260K"), quantized(stories, "q4_K_M", "stories260K"),
          kSharedModels + "tok512-ar-1m.gguf"};
}

std::string short_name(const std::string& path) {
  return path.substr(path.find_last_of('/') + 1);
}

Result<std::unique_ptr<Engine>> engine_on(const std::string& backend, const std::string& model,
                                          const std::string& extra = "") {
  return support::shared_model_engine(
      model, "[backend]\nplugin = \"" + backend + "\"\n[cache]\nmax_tokens = 320\n" + extra);
}

std::vector<int32_t> excerpt(const Engine& engine, std::size_t tokens) {
  auto text = read_text_file(std::string(TESSERA_SHARED_DIR) + "/data/tinystories_train_head.txt",
                             "text file", uint64_t{1} << 26);
  EXPECT_TRUE(text.ok());
  if (!text.ok()) return {};
  auto ids = engine.tokenizer().encode(text->substr(0, 8000), true);
  EXPECT_TRUE(ids.ok());
  if (!ids.ok()) return {};
  ids->resize(std::min(ids->size(), tokens));
  return *ids;
}

// Greedy tokens of one lane, `count` of them (EOS does not stop it).
std::vector<int32_t> greedy(Engine& engine, const std::vector<int32_t>& prompt, int64_t count) {
  GenerationRequest request;
  request.prompt = prompt;
  request.max_new_tokens = count;
  request.stop_at_eos = false;
  std::vector<int32_t> out;
  auto stats = engine.generate(request, [&](int32_t token, int) {
    out.push_back(token);
    return true;
  });
  EXPECT_TRUE(stats.ok()) << stats.status().to_string();
  return out;
}

class BackendModels : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() == "cpu") GTEST_SKIP() << "cpu is the reference";
    auto backend = conformance::backend_under_test(GetParam());
    if (!backend.ok()) GTEST_SKIP() << GetParam() << ": " << backend.status().message();
  }
};

TEST_P(BackendModels, PerplexityMatchesTheCpu) {
  for (const std::string& model : model_files()) {
    auto cpu = engine_on("cpu", model);
    auto device = engine_on(GetParam(), model);
    ASSERT_TRUE(cpu.ok()) << cpu.status().to_string();
    ASSERT_TRUE(device.ok()) << device.status().to_string();
    const std::vector<int32_t> ids = excerpt(**cpu, 257);
    auto on_cpu = score_tokens(**cpu, ids);
    auto on_device = score_tokens(**device, ids);
    ASSERT_TRUE(on_cpu.ok()) << on_cpu.status().to_string();
    ASSERT_TRUE(on_device.ok()) << on_device.status().to_string();
    const double ppl_cpu = std::exp(on_cpu->mean_nll);
    const double ppl_device = std::exp(on_device->mean_nll);
    std::printf("%s %s: perplexity %.6f (cpu %.6f), relative %.2e\n", GetParam().c_str(),
                short_name(model).c_str(), ppl_device, ppl_cpu, std::abs(ppl_device / ppl_cpu - 1));
    EXPECT_LT(std::abs(ppl_device / ppl_cpu - 1), 1e-4) << short_name(model);
  }
}

// Mean NLL of the excerpt's first `tokens` predictions on both backends.
void expect_same_nll(const std::string& backend, const std::string& model, std::size_t tokens,
                     const std::string& extra = "") {
  auto cpu = engine_on("cpu", model, extra);
  auto device = engine_on(backend, model, extra);
  ASSERT_TRUE(cpu.ok()) << cpu.status().to_string();
  ASSERT_TRUE(device.ok()) << device.status().to_string();
  const std::vector<int32_t> ids = excerpt(**cpu, tokens + 1);
  auto on_cpu = score_tokens(**cpu, ids);
  auto on_device = score_tokens(**device, ids);
  ASSERT_TRUE(on_cpu.ok()) << on_cpu.status().to_string();
  ASSERT_TRUE(on_device.ok()) << on_device.status().to_string();
  const double relative = std::abs(on_device->mean_nll / on_cpu->mean_nll - 1);
  std::printf("%s %s: mean NLL %.8f (cpu %.8f), relative %.2e\n", backend.c_str(),
              short_name(model).c_str(), on_device->mean_nll, on_cpu->mean_nll, relative);
  EXPECT_LT(relative, 1e-4) << short_name(model);
}

// Every architecture's forward (llama 3's RoPE scaling, qwen2's biases,
// qwen3's QK-norm, gemma3's GeGLU, soft-cap and sliding-window layers) and
// the k-quants on rows they fit, on random weights of test shapes.
TEST_P(BackendModels, ArchitecturesAndKQuantsMatchTheCpu) {
  for (const char* arch : {"llama3", "qwen2", "qwen3", "gemma3"}) {
    auto spec = synthetic_shape("tiny", arch);
    ASSERT_TRUE(spec.ok()) << spec.status().to_string();
    spec->vocab_from = kSharedModels + "ggml-vocab-llama-spm.gguf";
    const std::string out = testing::test_model_dir() + "/tiny-" + arch + ".gguf";
    ASSERT_TRUE(make_synthetic_model(*spec, out).ok());
    expect_same_nll(GetParam(), out, 32);
  }
  const std::string k256 = testing::synthetic_256();
  for (const char* target : {"q4_K_M", "q4_0", "bf16"})  // q4_K_M holds q6_K matrices too
    expect_same_nll(GetParam(), quantized(k256, target, "synthetic-256"), 32);
}

// The codecs on every store. A layout the backend reads (the int8 and int4
// records on Vulkan) keeps its records in the device's memory, encoded,
// round-tripped and decoded there with no layer split; any other (lattice,
// or a backend without record kernels) goes through the split at the codec
// point (encoded and decoded on the host). The CPU attends the codes fused.
TEST_P(BackendModels, CodecsMatchTheCpu) {
  const std::string model = kSharedModels + "stories260K.gguf";
  for (const char* store : {"static", "paged", "sink_window"})
    for (const char* codec : {"int8", "int4", "lattice"}) {
      const std::string extra =
          std::string("plugin = \"") + store + "\"\n" +
          (std::string(store) == "sink_window" ? "sink = 4\nwindow = 24\n" : "") +
          "[cache.codec]\nplugin = \"" + codec + "\"\n";
      SCOPED_TRACE(extra);
      auto device = engine_on(GetParam(), model, extra);
      ASSERT_TRUE(device.ok()) << device.status().to_string();
      Backend& backend = (*device)->backend();
      const Compressor& layer0 = (*device)->cache().codec(0);
      const bool on_device =
          !backend.device_info().host_memory && backend.supports_kv_records(layer0.record_layout(
                                                    (*device)->cache().geometry().vector_width()));
      EXPECT_EQ((*device)->cache().kv_in_backend(), on_device);
      expect_same_nll(GetParam(), model, 64, extra);
      // Scoring on this engine: no pass split where the device has the kernels.
      const std::vector<int32_t> ids = excerpt(**device, 33);
      ASSERT_TRUE(score_tokens(**device, ids).ok());
      const int64_t split = (*device)->transformer().codec_split_layers();
      if (on_device) {
        EXPECT_EQ(split, 0);
      } else if (!backend.device_info().host_memory) {
        EXPECT_GT(split, 0);
      }
    }
}

// Every store on the backend: where the backend's memory is a device's, the
// K/V live there (attention binds a static segment in place, and gathers
// paged blocks and a sink window's runs on the device, turning keys kept
// before RoPE and moved sinks there), and the scores match the CPU's.
TEST_P(BackendModels, StoresMatchTheCpu) {
  const std::string model = kSharedModels + "stories260K.gguf";
  for (const std::string& store :
       {std::string("plugin = \"static\"\n"), std::string("plugin = \"paged\"\nblock_size = 16\n"),
        std::string("plugin = \"sink_window\"\nsink = 4\n"
                    "window = 24\n"),
        std::string("plugin = \"sink_window\"\nsink = 4\n"
                    "window = 24\npositions = \"reassign\"\n"),
        std::string("plugin = \"paged\"\ncodec_stage = \"pre_rope\"\nblock_size = 16\n")}) {
    auto device = engine_on(GetParam(), model, store);
    ASSERT_TRUE(device.ok()) << device.status().to_string();
    const bool on_device = !(*device)->backend().device_info().host_memory;
    EXPECT_EQ((*device)->cache().kv_in_backend(), on_device) << store;
    SCOPED_TRACE(store);
    expect_same_nll(GetParam(), model, 64, store);
  }
}

// Attention plans a backend derived, and target forwards, over `tokens`
// greedy tokens of an 8-token prompt.
std::pair<uint64_t, int64_t> plans_and_forwards(Engine& engine, int64_t tokens) {
  const uint64_t plans = engine.backend().counters().attention_plans;
  const int64_t forwards = engine.counters().target_forwards;
  EXPECT_EQ(greedy(engine, excerpt(engine, 8), tokens).size(), static_cast<std::size_t>(tokens));
  return {engine.backend().counters().attention_plans - plans,
          engine.counters().target_forwards - forwards};
}

// The visibility is derived and uploaded once per forward, not once per
// layer (AttentionParams::visibility_id): on a backend that counts its
// attention plans, stories260K's five layers share one per forward, with the
// stored K/V bound whole (static) or gathered from blocks (paged); tiny
// gemma3's four layers alternate sliding-window and global rules over one
// store, so two per forward, each kept across the other's layers.
TEST_P(BackendModels, OneAttentionPlanPerForward) {
  const std::string model = kSharedModels + "stories260K.gguf";
  for (const std::string& store : {std::string("plugin = \"static\"\n"),
                                   std::string("plugin = \"paged\"\nblock_size = 16\n")}) {
    SCOPED_TRACE(store);
    auto device = engine_on(GetParam(), model, store);
    ASSERT_TRUE(device.ok()) << device.status().to_string();
    ASSERT_EQ((*device)->model().config.n_layers, 5);
    const auto [plans, forwards] = plans_and_forwards(**device, 24);
    // A backend that counts nothing (the CPU's ops run as called) derives no plans.
    if ((*device)->backend().counters().commands == 0)
      GTEST_SKIP() << GetParam() << " counts no work (BackendCounters)";
    EXPECT_GE(forwards, 24);
    EXPECT_EQ(plans, static_cast<uint64_t>(forwards))
        << "one plan per forward (each forward is one chunk here), not one per layer";
  }
  auto spec = synthetic_shape("tiny", "gemma3");
  ASSERT_TRUE(spec.ok()) << spec.status().to_string();
  spec->vocab_from = kSharedModels + "ggml-vocab-llama-spm.gguf";
  const std::string gemma = testing::test_model_dir() + "/tiny-gemma3-plans.gguf";
  ASSERT_TRUE(make_synthetic_model(*spec, gemma).ok());
  // Every layer in one store (swa_full), the layers differing by their rule
  // only; and the sliding layers in a store of their own (two layer groups).
  for (const std::string& layout : {std::string("swa_full = true\n"), std::string()}) {
    SCOPED_TRACE(layout.empty() ? "two layer groups" : layout);
    auto device = engine_on(GetParam(), gemma, layout);
    ASSERT_TRUE(device.ok()) << device.status().to_string();
    ASSERT_EQ((*device)->model().config.n_layers, 4);
    EXPECT_TRUE((*device)->cache().kv_in_backend()) << "every group's K/V on the device";
    const auto [plans, forwards] = plans_and_forwards(**device, 16);
    EXPECT_EQ(plans, 2 * static_cast<uint64_t>(forwards))
        << "gemma3: one plan per rule and forward, alternating layers keeping theirs";
  }
}

TEST_P(BackendModels, GreedyTextMatchesTheCpu) {
  for (const std::string& model : model_files()) {
    auto cpu = engine_on("cpu", model);
    auto device = engine_on(GetParam(), model);
    ASSERT_TRUE(cpu.ok()) << cpu.status().to_string();
    ASSERT_TRUE(device.ok()) << device.status().to_string();
    const std::vector<int32_t> prompt = excerpt(**cpu, 8);
    const std::vector<int32_t> on_cpu = greedy(**cpu, prompt, 256);
    const std::vector<int32_t> on_device = greedy(**device, prompt, 256);
    ASSERT_EQ(on_cpu.size(), 256u);
    const auto differ =
        std::mismatch(on_cpu.begin(), on_cpu.end(), on_device.begin(), on_device.end());
    if (differ.first == on_cpu.end()) {
      std::printf("%s %s: 256 greedy tokens identical to the cpu's\n", GetParam().c_str(),
                  short_name(model).c_str());
      continue;
    }
    ADD_FAILURE() << GetParam() << " " << short_name(model) << ": greedy text differs at step "
                  << (differ.first - on_cpu.begin()) << " (cpu " << *differ.first << ", "
                  << GetParam() << " " << (differ.second == on_device.end() ? -1 : *differ.second)
                  << ")";
  }
}

TEST_P(BackendModels, SpeculativeGreedyEqualsPlainOnTheBackend) {
  const std::string target = kSharedModels + "tok512-ar-1m.gguf";
  auto plain = engine_on(GetParam(), target);
  ASSERT_TRUE(plain.ok()) << plain.status().to_string();
  const std::vector<int32_t> prompt = excerpt(**plain, 8);
  const std::vector<int32_t> expected = greedy(**plain, prompt, 96);
  for (const std::string& drafting :
       {std::string("proposer = \"ngram\"\n"),
        "proposer = \"ar_draft\"\ndraft_model = \"" + kSharedModels + "stories260K.gguf\"\n"}) {
    auto spec = engine_on(GetParam(), target, "[decode]\n" + drafting);
    ASSERT_TRUE(spec.ok()) << spec.status().to_string();
    EXPECT_EQ(greedy(**spec, prompt, 96), expected) << drafting;
  }
  // With int8 records (on the device where it reads them): rejected drafts
  // are truncated away, and the verified tokens' records equal plain decoding's.
  const std::string int8 = "[cache.codec]\nplugin = \"int8\"\n";
  auto plain_int8 = engine_on(GetParam(), target, int8);
  ASSERT_TRUE(plain_int8.ok()) << plain_int8.status().to_string();
  auto spec_int8 = engine_on(GetParam(), target, int8 + "[decode]\nproposer = \"ngram\"\n");
  ASSERT_TRUE(spec_int8.ok()) << spec_int8.status().to_string();
  EXPECT_EQ(greedy(**spec_int8, prompt, 96), greedy(**plain_int8, prompt, 96)) << "int8";
}

// Block diffusion (tok512-sdar-1m) on the backend, through the transformer
// and through the fixed-shape step (its mask, keep/insert and activations in
// the backend's memory, the static store's device tensor updated in place):
// the CPU's tokens, with the same denoise and commit forwards.
TEST_P(BackendModels, BlockDiffusionMatchesTheCpu) {
  const std::string model = kSharedModels + "tok512-sdar-1m.gguf";
  for (const char* fixed : {"false", "true"}) {
    const std::string extra = std::string(
                                  "[decode]\nproposer = \"none\"\nverifier = \"block_diffusion\"\n"
                                  "denoise_steps = 4\nunmask = \"threshold\"\nthreshold = 0.9\n"
                                  "max_batch = 4\nfixed_shape = ") +
                              fixed + "\n";
    SCOPED_TRACE(std::string("fixed_shape = ") + fixed);
    std::vector<std::vector<int32_t>> tokens;
    std::vector<DecodeCounters> counters;
    for (const std::string& backend : {std::string("cpu"), GetParam()}) {
      auto engine = engine_on(backend, model, extra);
      ASSERT_TRUE(engine.ok()) << engine.status().to_string();
      GenerationRequest request;
      request.prompt = excerpt(**engine, 8);
      request.max_new_tokens = 48;
      request.stop_at_eos = false;
      std::vector<int32_t> out;
      auto stats = (*engine)->generate(request, [&](int32_t token, int) {
        out.push_back(token);
        return true;
      });
      ASSERT_TRUE(stats.ok()) << backend << ": " << stats.status().to_string();
      tokens.push_back(out);
      counters.push_back(stats->decode);
    }
    EXPECT_EQ(tokens[0], tokens[1]);
    EXPECT_EQ(counters[0].denoise_forwards, counters[1].denoise_forwards);
    EXPECT_EQ(counters[0].commit_forwards, counters[1].commit_forwards);
    EXPECT_GT(counters[1].denoise_forwards, 0);
  }
}

// (On paged, the batched branches fork the prompt's blocks and copy one on
// its first write: Backend::copy on a device.)
// BIM branches against the same lanes batched, on the static and paged stores.
void expect_bim_equals_batched(const std::string& backend, const std::string& codec) {
  SCOPED_TRACE(codec);
  const std::string model = kSharedModels + "stories260K.gguf";
  std::vector<std::vector<std::vector<int32_t>>> outputs;  // per layout, per lane
  for (const char* layout : {"bim", "batched", "batched paged"}) {
    const std::string name = layout;
    const std::string store = name == "batched paged" ? "plugin = \"paged\"\nblock_size = 8\n" : "";
    auto engine =
        engine_on(backend, model,
                  store + "[cache.codec]\nplugin = \"" + codec +
                      "\"\n[decode]\nbranch_layout = \"" + name.substr(0, name.find(' ')) + "\"\n");
    ASSERT_TRUE(engine.ok()) << engine.status().to_string();
    GenerationRequest request;
    request.prompt = excerpt(**engine, 12);
    request.branches = {{}, {request.prompt[1]}, {request.prompt[2], request.prompt[3]}};
    request.max_new_tokens = 24;
    request.stop_at_eos = false;
    std::vector<std::vector<int32_t>> lanes(request.branches.size());
    auto stats = (*engine)->generate(request, [&](int32_t token, int lane) {
      lanes.at(static_cast<std::size_t>(lane)).push_back(token);
      return true;
    });
    ASSERT_TRUE(stats.ok()) << stats.status().to_string();
    outputs.push_back(lanes);
  }
  EXPECT_EQ(outputs[0], outputs[1]);
  EXPECT_EQ(outputs[0], outputs[2]);
}

// With the identity codec and with int8 records (kept on the device where it
// reads them): the paged store's forks copy records as they copy floats.
TEST_P(BackendModels, BimBranchesEqualBatchedOnTheBackend) {
  for (const char* codec : {"identity", "int8"}) expect_bim_equals_batched(GetParam(), codec);
}

std::string instance_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string name = info.param;
  for (char& ch : name)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return name;
}

INSTANTIATE_TEST_SUITE_P(Models, BackendModels,
                         ::testing::ValuesIn(conformance::selected_backends()), instance_name);

}  // namespace
}  // namespace tessera

int main(int argc, char** argv) {
  tessera::conformance::select_backends(argc, argv);
  ::testing::InitGoogleTest(&argc, argv);
  const int result = RUN_ALL_TESTS();
  tessera::conformance::release_backends();
  return result;
}
