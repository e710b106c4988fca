#include "plugins/verifier_restored/linear_projection.h"

#include <algorithm>
#include <cstring>
#include <string_view>

#include "core/io/mapped_file.h"
#include "core/io/output_file.h"

namespace tessera {
namespace {

constexpr char kMagic[8] = {'T', 'S', 'K', 'V', 'P', 'R', 'O', 'J'};
constexpr uint32_t kVersion = 1;
constexpr std::size_t kHeaderBytes = sizeof kMagic + 5 * sizeof(uint32_t);

uint64_t fnv1a(const uint8_t* data, std::size_t size) {
  uint64_t hash = 1469598103934665603ull;
  for (std::size_t i = 0; i < size; ++i) {
    hash ^= data[i];
    hash *= 1099511628211ull;
  }
  return hash;
}

const char* keys_name(StoredKeys keys) {
  return keys == StoredKeys::kBeforeRope ? "pre_rope" : "post_rope";
}

template <typename T>
void put(std::string& out, T value) {
  char bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));
  out.append(bytes, sizeof(T));
}

template <typename T>
T get(const uint8_t* data, std::size_t& offset) {
  T value;
  std::memcpy(&value, data + offset, sizeof(T));
  offset += sizeof(T);
  return value;
}

Status check_shape(const std::string& path, const ProjectionShape& got,
                   const ProjectionShape& expected) {
  const auto describe = [](const ProjectionShape& s) {
    return std::to_string(s.layers) + " layers, " + std::to_string(s.kv_heads) + " KV heads, " +
           std::to_string(s.head_dim) + " dimensions per head, keys " + keys_name(s.keys);
  };
  if (got.layers == expected.layers && got.kv_heads == expected.kv_heads &&
      got.head_dim == expected.head_dim && got.keys == expected.keys)
    return ok_status();
  return invalid_argument("projection file " + path + " was fitted for " + describe(got) +
                          "; the target and cache need " + describe(expected) +
                          " (refit with tessera fit-projection and the same cache.codec_stage)");
}

}  // namespace

LinearProjection::LinearProjection(const ProjectionShape& shape)
    : shape_(shape),
      maps_(static_cast<std::size_t>(shape.total_floats()), 0.0f),
      input_(static_cast<std::size_t>(shape.head_dim)) {
  for (int l = 0; l < shape_.layers; ++l)
    for (int kv = 0; kv < 2; ++kv)
      for (int h = 0; h < shape_.kv_heads; ++h)
        for (int d = 0; d < shape_.head_dim; ++d) map(l, kv, h)[d * shape_.head_dim + d] = 1.0f;
}

float* LinearProjection::map(int l, int kv, int h) {
  return maps_.data() +
         ((static_cast<int64_t>(l) * 2 + kv) * shape_.kv_heads + h) * shape_.map_floats();
}

const float* LinearProjection::map(int l, int kv, int h) const {
  return const_cast<LinearProjection*>(this)->map(l, kv, h);
}

Status LinearProjection::check_matches(const std::string& path,
                                       const ProjectionShape& expected) const {
  return check_shape(path, shape_, expected);
}

Result<LinearProjection> LinearProjection::load(const std::string& path) {
  ASSIGN_OR_RETURN(auto file, MappedFile::open(path));
  const uint8_t* data = file->data();
  const std::size_t size = file->size();
  const auto bad = [&](const std::string& what) {
    return invalid_argument("projection file " + path + ": " + what);
  };
  if (size < sizeof kMagic || std::memcmp(data, kMagic, sizeof kMagic) != 0)
    return bad("not a K/V projection file (no TSKVPROJ magic)");
  if (size < kHeaderBytes) return bad("truncated inside its header");
  std::size_t offset = sizeof kMagic;
  const auto version = get<uint32_t>(data, offset);
  if (version != kVersion)
    return bad("version " + std::to_string(version) + ", this build reads version " +
               std::to_string(kVersion));
  ProjectionShape shape;
  shape.layers = static_cast<int>(get<uint32_t>(data, offset));
  shape.kv_heads = static_cast<int>(get<uint32_t>(data, offset));
  shape.head_dim = static_cast<int>(get<uint32_t>(data, offset));
  const auto keys = get<uint32_t>(data, offset);
  if (keys > 1) return bad("unknown key stage " + std::to_string(keys));
  shape.keys = keys == 1 ? StoredKeys::kBeforeRope : StoredKeys::kRotated;
  if (shape.layers <= 0 || shape.kv_heads <= 0 || shape.head_dim <= 0 || shape.layers > 4096 ||
      shape.kv_heads > 4096 || shape.head_dim > 4096)
    return bad("implausible shapes in its header (corrupt)");
  const auto floats = static_cast<std::size_t>(shape.total_floats());
  const std::size_t want = kHeaderBytes + floats * sizeof(float) + sizeof(uint64_t);
  if (size < want)
    return bad("truncated: " + std::to_string(size) + " bytes, its header's shapes need " +
               std::to_string(want));
  if (size > want)
    return bad(std::to_string(size - want) + " bytes after the checksum (not one projection)");
  std::size_t at_checksum = want - sizeof(uint64_t);
  if (get<uint64_t>(data, at_checksum) != fnv1a(data, want - sizeof(uint64_t)))
    return bad("checksum mismatch: the file is corrupt");
  LinearProjection projection(shape);
  std::memcpy(projection.maps_.data(), data + kHeaderBytes, floats * sizeof(float));
  return projection;
}

Status LinearProjection::save(const std::string& path) const {
  std::string bytes(kMagic, sizeof kMagic);
  put<uint32_t>(bytes, kVersion);
  put<uint32_t>(bytes, static_cast<uint32_t>(shape_.layers));
  put<uint32_t>(bytes, static_cast<uint32_t>(shape_.kv_heads));
  put<uint32_t>(bytes, static_cast<uint32_t>(shape_.head_dim));
  put<uint32_t>(bytes, shape_.keys == StoredKeys::kBeforeRope ? 1u : 0u);
  bytes.append(reinterpret_cast<const char*>(maps_.data()), maps_.size() * sizeof(float));
  put<uint64_t>(bytes, fnv1a(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()));
  ASSIGN_OR_RETURN(OutputFile out, OutputFile::create(path, "projection file"));
  RETURN_IF_ERROR(out.write(bytes));
  return out.commit();
}

void LinearProjection::apply(HistoryKV& kv, int64_t begin, int64_t end) const {
  const int hd = shape_.head_dim;
  const int64_t kv_width = static_cast<int64_t>(shape_.kv_heads) * hd;
  float* in = input_.data();
  for (int l = 0; l < shape_.layers; ++l)
    for (int which = 0; which < 2; ++which) {
      float* base = (which == 0 ? kv.k() : kv.v()) + l * kv.layer_stride();
      for (int64_t e = begin; e < end; ++e)
        for (int h = 0; h < shape_.kv_heads; ++h) {
          float* x = base + e * kv_width + static_cast<int64_t>(h) * hd;
          std::copy_n(x, hd, in);
          const float* w = map(l, which, h);
          const float* b = w + static_cast<int64_t>(hd) * hd;
          for (int r = 0; r < hd; ++r) {
            float sum = b[r];
            const float* row = w + static_cast<int64_t>(r) * hd;
            for (int c = 0; c < hd; ++c) sum += row[c] * in[c];
            x[r] = sum;
          }
        }
    }
}

}  // namespace tessera
