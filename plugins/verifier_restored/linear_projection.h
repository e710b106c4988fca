// The `linear` projection: per layer, per KV head, K and V separately,
// y = W x + b (head_dim x head_dim and head_dim), mapping the restorer's K/V
// to the target's. Fitted by least squares (projection_fit.h) and kept in a
// file of its own:
//
//   "TSKVPROJ"            8 bytes of magic
//   u32 version           1
//   u32 layers, kv_heads, head_dim
//   u32 keys              0: keys rotated (cache.codec_stage post_rope), 1: before RoPE
//   f32 maps              per layer, K then V, per KV head: W row-major (output
//                         rows), then b; (2 * layers * kv_heads * (hd * hd + hd)) floats
//   u64 checksum          FNV-1a over every byte before it
//
// all little-endian. A file that is not one, is truncated or corrupt, or was
// fitted for other shapes or another key stage is refused with its path and
// what is wrong.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/cache/kv_view.h"
#include "core/status/status.h"
#include "plugins/verifier_restored/kv_projection.h"

namespace tessera {

struct ProjectionShape {
  int layers = 0;
  int kv_heads = 0;
  int head_dim = 0;
  StoredKeys keys = StoredKeys::kRotated;

  // Floats of one map (W and b) and of the whole file's maps.
  int64_t map_floats() const { return static_cast<int64_t>(head_dim) * head_dim + head_dim; }
  int64_t total_floats() const {
    return 2 * static_cast<int64_t>(layers) * kv_heads * map_floats();
  }
};

class LinearProjection final : public KVProjection {
 public:
  // The identity maps for `shape` (W = I, b = 0), to fill with set_map.
  explicit LinearProjection(const ProjectionShape& shape);
  // Reads `path` and checks its format (magic, version, size, checksum).
  static Result<LinearProjection> load(const std::string& path);
  Status save(const std::string& path) const;
  // Whether it was fitted for `expected` (the target's shapes, the cache's
  // key stage); the error names `path`.
  Status check_matches(const std::string& path, const ProjectionShape& expected) const;

  const ProjectionShape& shape() const { return shape_; }
  // The map of layer l, K (kv = 0) or V (kv = 1), KV head h: W then b.
  float* map(int l, int kv, int h);
  const float* map(int l, int kv, int h) const;

  void apply(HistoryKV& kv, int64_t begin, int64_t end) const override;

 private:
  ProjectionShape shape_;
  std::vector<float> maps_;
  mutable std::vector<float> input_;  // one head's vector while it is overwritten
};

}  // namespace tessera
