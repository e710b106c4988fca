#include "fuzz/fuzz_support.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <vector>

#include "core/backend/backend.h"
#include "core/cache/checked_cache_store.h"
#include "core/model/transformer.h"
#include "core/plugin/builtin_plugins.h"

namespace tessera::fuzz {
namespace {

// Past this the forward costs more than the parse it checks.
constexpr uint64_t kMaxForwardParameters = 1u << 20;

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "fuzz support: %s\n", what.c_str());
  std::abort();
}

template <typename Interface>
std::unique_ptr<Interface> make(std::string_view kind, std::string_view name) {
  const auto record = builtin_registry().find(kind, name);
  if (!record.ok()) fail("the fuzz build lacks " + record.status().message());
  auto object = create_plugin<Interface>(builtin_registry(), **record, OptionValues{});
  if (!object.ok()) fail(object.status().message());
  return std::move(object).value();
}

}  // namespace

const PluginRegistry& builtin_registry() {
  static const PluginRegistry* registry = new PluginRegistry(builtin_plugins());
  return *registry;
}

void run_small_forward(const LoadedModel& model) {
  uint64_t parameters = 0;
  for (const TensorInfo& t : model.tensors) {
    uint64_t n = 1;
    for (int64_t d : t.shape) n *= static_cast<uint64_t>(d);
    parameters += n;
  }
  const ModelConfig& c = model.config;
  if (parameters > kMaxForwardParameters || c.vocab_size > 4096 || c.dim > 1024 ||
      c.hidden_dim > 4096 || c.n_layers > 8)
    return;

  auto backend = make<Backend>("backend", "cpu");
  if (!backend->init(BackendOptions{1, 8}).ok()) fail("cpu backend init");
  auto transformer = Transformer::create(model, *backend, /*max_batch=*/4);
  if (!transformer.ok()) return;  // a model the forward refuses, with a Status
  // The codec outlives the cache (declared first); the cache borrows one pointer per layer.
  const std::unique_ptr<Compressor> codec = make<Compressor>("compressor", "identity");
  const CacheGeometry geometry = (*transformer)->cache_geometry();
  const std::vector<const Compressor*> layer_codecs(static_cast<std::size_t>(geometry.layers),
                                                    codec.get());
  CheckedCacheStore cache(make<CacheStore>("cache", "static"), "static");
  if (!cache.init(geometry, layer_codecs).ok()) return;
  if (!cache.allocate(0, 8).ok()) return;
  const int32_t last = c.vocab_size - 1;
  const int32_t tokens[] = {0, last};
  const int32_t positions[] = {0, 1};
  auto logits = (*transformer)->forward(cache, 0, tokens, positions, LogitsWanted::kAll);
  if (logits.ok()) {
    for (float v : *logits)
      if (!std::isfinite(v)) fail("forward returned a non-finite logit without an error");
  }
  (void)cache.release(0);
}

std::shared_ptr<const MappedFile> shared_file(const std::string& path) {
  auto file = MappedFile::open(path);
  if (!file.ok()) fail("cannot read " + path + ": " + file.status().message());
  return std::move(file).value();
}

std::shared_ptr<const MappedFile> input_file(const char* name, const uint8_t* data,
                                             std::size_t size) {
  return MappedFile::from_bytes(name, std::vector<uint8_t>(data, data + size));
}

}  // namespace tessera::fuzz
