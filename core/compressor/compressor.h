// A KV codec: turns runs of K or V vectors into bytes and back. Stateless and
// deterministic, so the same input always encodes to the same bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/compressor/kv_records.h"
#include "core/plugin/plugin_object.h"
#include "core/status/status.h"

namespace tessera {

class Compressor : public PluginObject {
 public:
  // Whether the codec can store vectors of head_dim floats (a lattice codec
  // needs a power of two); the message names head_dim and what would work.
  virtual Status supports(int head_dim) const {
    (void)head_dim;
    return ok_status();
  }
  // Bytes needed to store n vectors of head_dim floats.
  virtual std::size_t encoded_bytes(int64_t n_vectors, int head_dim) const = 0;
  // Storage cost of one vector, in bits (for reports).
  virtual double bits_per_vector(int head_dim) const = 0;
  // True when decode(encode(x)) == x bit for bit and the bytes are the floats
  // themselves, so a cache may hand out its storage as f32 without decoding.
  virtual bool stores_raw_f32() const { return false; }
  // src: n_vectors * head_dim floats; dst: encoded_bytes(n_vectors, head_dim) bytes.
  virtual void encode(const float* src, int64_t n_vectors, int head_dim, uint8_t* dst) const = 0;
  virtual void decode(const uint8_t* src, int64_t n_vectors, int head_dim, float* dst) const = 0;

  // What a user should know about this codec at this head size (e.g. "group
  // size clamped to head_dim 8"), shown as a warning; "" when nothing.
  virtual std::string notes(int head_dim) const {
    (void)head_dim;
    return {};
  }

  // Attention on encoded vectors, without decoding them (optional). When
  // attends_encoded() is true, attention may hand the codec its stored
  // records (n of them, encoded_bytes(1, head_dim) bytes each, one after
  // another) and call, per query head:
  //   transform_query   q_t = the query in the codec's domain (the lattice
  //                     codec rotates it by its Hadamard matrix);
  //   dot_encoded       scores[j] = dot(q, decode(record j)), given q_t;
  //   accumulate_encoded  acc += sum_j weights[j] * record j in the codec's domain;
  //   finish_output     out = acc back in the original domain.
  // Results equal decode-then-compute within float rounding. The defaults are
  // never called when attends_encoded() is false.
  virtual bool attends_encoded() const { return false; }
  virtual void transform_query(const float* q, int head_dim, float* q_t) const {
    (void)q, (void)head_dim, (void)q_t;
  }
  virtual void dot_encoded(const float* q_t, const uint8_t* records, int64_t n, int head_dim,
                           float* scores) const {
    (void)q_t, (void)records, (void)n, (void)head_dim, (void)scores;
  }
  virtual void accumulate_encoded(const float* weights, const uint8_t* records, int64_t n,
                                  int head_dim, float* acc) const {
    (void)weights, (void)records, (void)n, (void)head_dim, (void)acc;
  }
  virtual void finish_output(const float* acc, int head_dim, float* out) const {
    (void)acc, (void)head_dim, (void)out;
  }

  // The same for n_heads query heads that read the same records (grouped-query
  // attention), head h's data head_dim (q_t, acc) or n (scores, weights)
  // floats after head h - 1's:
  //   scores[h·n + j] = dot_encoded(q_t + h·head_dim) of record j;
  //   acc + h·head_dim += accumulate_encoded(weights + h·n).
  // Each head's results are the floats of the one-head calls. The defaults
  // make those calls; a codec overrides them to read each record once for all
  // heads, when reading a record costs more than using it. (ABI 2.1)
  virtual void dot_encoded_heads(const float* q_t, int n_heads, const uint8_t* records, int64_t n,
                                 int head_dim, float* scores) const {
    for (int h = 0; h < n_heads; ++h)
      dot_encoded(q_t + static_cast<int64_t>(h) * head_dim, records, n, head_dim, scores + h * n);
  }
  virtual void accumulate_encoded_heads(const float* weights, int n_heads, const uint8_t* records,
                                        int64_t n, int head_dim, float* acc) const {
    for (int h = 0; h < n_heads; ++h)
      accumulate_encoded(weights + h * n, records, n, head_dim,
                         acc + static_cast<int64_t>(h) * head_dim);
  }

  // The named layout of this codec's records of head_dim floats
  // (core/compressor/kv_records.h), or kOpaque: a backend that implements
  // the layout keeps such records in its own memory and reads them there.
  // A codec that names a layout must encode exactly that layout, bit for
  // bit. (ABI 8.2)
  virtual KVRecordLayout record_layout(int head_dim) const {
    (void)head_dim;
    return {};
  }
};

}  // namespace tessera
