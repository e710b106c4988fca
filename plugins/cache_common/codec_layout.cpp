#include "plugins/cache_common/codec_layout.h"

namespace tessera {

Status CodecLayout::init(const CacheGeometry& geometry, std::span<const Compressor* const> codecs,
                         const std::string& store) {
  if (ready()) return failed_precondition(store + ": init() called twice");
  if (geometry.layers <= 0 || geometry.kv_heads <= 0 || geometry.head_dim <= 0) {
    return invalid_argument(
        store + ": geometry needs positive layers, kv_heads and head_dim, got " +
        std::to_string(geometry.layers) + ", " + std::to_string(geometry.kv_heads) + ", " +
        std::to_string(geometry.head_dim));
  }
  if (geometry.heads_per_vector != 1 && geometry.heads_per_vector != geometry.kv_heads) {
    return invalid_argument(store + ": a codec vector spans one KV head or all " +
                            std::to_string(geometry.kv_heads) + " of a token, not " +
                            std::to_string(geometry.heads_per_vector));
  }
  if (codecs.size() != static_cast<std::size_t>(geometry.layers))
    return invalid_argument(store + ": one codec per layer needed");
  const int width = geometry.vector_width();
  std::vector<const Compressor*> checked;
  for (const Compressor* codec : codecs) {
    if (codec == nullptr) return invalid_argument(store + ": no codec given");
    const std::size_t one = codec->encoded_bytes(1, width);
    if (one == 0) return invalid_argument(store + ": the codec encodes a vector in 0 bytes");
    for (int64_t n : {2, 3, 7, 64, 1000}) {
      if (codec->encoded_bytes(n, width) != static_cast<std::size_t>(n) * one) {
        return invalid_argument(
            store + ": needs a per-vector codec (encoded_bytes(n) == n * encoded_bytes(1)), but " +
            "encoded_bytes(" + std::to_string(n) + ", " + std::to_string(width) +
            ") = " + std::to_string(codec->encoded_bytes(n, width)) + " != " + std::to_string(n) +
            " * " + std::to_string(one));
      }
    }
    const bool raw = codec->stores_raw_f32();
    if (raw && one != sizeof(float) * static_cast<std::size_t>(width)) {
      return invalid_argument(store + ": the codec says it stores raw f32 but encodes " +
                              std::to_string(width) + " floats in " + std::to_string(one) +
                              " bytes");
    }
    checked.push_back(codec);
    layer_start_.push_back(token_bytes_);
    vector_bytes_.push_back(one);
    raw_.push_back(raw);
    any_encoded_ = any_encoded_ || !raw;
    token_bytes_ += 2 * static_cast<std::size_t>(geometry.vectors_per_token()) * one;
  }
  geometry_ = geometry;
  codecs_ = std::move(checked);
  return ok_status();
}

}  // namespace tessera
