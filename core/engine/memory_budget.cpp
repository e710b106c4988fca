#include "core/engine/memory_budget.h"

#include <algorithm>
#include <cmath>

namespace tessera {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;

std::string mib(double bytes) {
  return std::to_string(static_cast<long long>(std::ceil(bytes / kMiB))) + " MiB";
}

double bytes_per_token(const MemoryRequest& r) {
  return static_cast<double>(r.geometry.layers) * 2.0 * static_cast<double>(r.geometry.kv_heads) *
         r.bytes_per_vector;
}

// What a token costs, spelled out for the reader.
std::string per_token_text(const MemoryRequest& r) {
  return std::to_string(r.geometry.layers) + " layers x 2 (K, V) x " +
         std::to_string(r.geometry.kv_heads) + " kv heads x " +
         std::to_string(static_cast<long long>(std::ceil(r.bytes_per_vector))) +
         " bytes per vector with codec '" + r.codec_name + "'";
}

std::string fix_text(const MemoryRequest& r, double budget) {
  const double per_token = bytes_per_token(r) * static_cast<double>(r.sequences);
  const auto fits = static_cast<long long>(per_token > 0 ? std::floor(budget / per_token) : 0);
  if (fits < 1 && r.sequences > 1) {
    MemoryRequest single = r;
    single.sequences = 1;
    const double one = kv_cache_bytes(single);
    const auto sessions = static_cast<long long>(one > 0 ? std::floor(budget / one) : 0);
    return "lower server.max_sessions to " + std::to_string(std::max(1LL, sessions)) +
           " or less, or cache.max_tokens";
  }
  if (fits < 1) return "no cache.max_tokens fits; use a smaller model or free memory";
  return "lower cache.max_tokens to " +
         std::to_string(std::min<long long>(fits, r.max_tokens - 1)) + " or less" +
         (r.sequences > 1 ? " (or server.max_sessions)" : "");
}

}  // namespace

double kv_cache_bytes(const MemoryRequest& request) {
  const double per_layer_token = bytes_per_token(request) / std::max(1, request.geometry.layers);
  const int full_layers = request.geometry.layers - request.sliding_layers;
  const int64_t sliding_tokens = std::min(request.max_tokens, request.sliding_entries);
  return per_layer_token * static_cast<double>(request.sequences) *
         (static_cast<double>(request.max_tokens) * full_layers +
          static_cast<double>(sliding_tokens) * request.sliding_layers);
}

double codec_bytes_per_vector(const Compressor& codec, int head_dim) {
  constexpr int64_t kRun = 1024;
  return static_cast<double>(codec.encoded_bytes(kRun, head_dim)) / static_cast<double>(kRun);
}

Status check_memory_budget(const MemoryRequest& request, const AvailableMemory& available) {
  const double prefix = static_cast<double>(request.prefix_cache_bytes);
  const double kv = kv_cache_bytes(request) + prefix;
  const std::string asks =
      (request.sequences > 1
           ? "server.max_sessions = " + std::to_string(request.sequences) + " sessions of "
           : std::string()) +
      "cache.max_tokens = " + std::to_string(request.max_tokens) +
      (request.sequences > 1 ? " ask for " : " asks for ") + mib(kv - prefix) +
      " of KV cache (per token: " + per_token_text(request) + ")" +
      (prefix > 0 ? ", and server.prefix_cache_mib = " + mib(prefix) + " more (lower it to fit)"
                  : std::string());
  if (request.cap_bytes > 0 && kv > static_cast<double>(request.cap_bytes))
    return resource_exhausted(
        asks + ", more than cache.max_memory_mib = " + mib(static_cast<double>(request.cap_bytes)) +
        "; " + fix_text(request, static_cast<double>(request.cap_bytes)) +
        ", or raise cache.max_memory_mib");
  const double weights = static_cast<double>(request.weight_bytes);
  if (request.weights_on_device && request.device_free_bytes > 0 &&
      weights > static_cast<double>(request.device_free_bytes))
    return resource_exhausted("the model's " + mib(weights) + " of weights do not fit the " +
                              mib(static_cast<double>(request.device_free_bytes)) +
                              " of memory free on " + request.device_name +
                              "; use a smaller or more quantised model, another device "
                              "([backend] device), or backend.plugin = \"cpu\"");
  if (request.kv_on_device && request.device_free_bytes > 0 &&
      weights + kv > static_cast<double>(request.device_free_bytes))
    return resource_exhausted(
        asks + ", in the memory of " + request.device_name + "; with the model's " + mib(weights) +
        " of weights that is more than its " + mib(static_cast<double>(request.device_free_bytes)) +
        " free; " +
        fix_text(request, std::max(0.0, static_cast<double>(request.device_free_bytes) - weights)));
  if (!available.known()) return ok_status();
  const double host_weights = request.weights_on_device ? 0.0 : weights;
  const double host_kv = request.kv_on_device ? 0.0 : kv;
  const double budget = static_cast<double>(available.bytes);
  if (host_kv + host_weights > budget)
    return resource_exhausted(
        asks +
        (request.weights_on_device ? std::string("; that is")
                                   : "; with the model's " + mib(weights) + " of weights that is") +
        " more than the " + mib(budget) + " of memory available (" + available.source + "); " +
        fix_text(request, std::max(0.0, budget - host_weights)));
  return ok_status();
}

}  // namespace tessera
