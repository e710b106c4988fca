#include "plugins/verifier_restored/history_kv.h"

#include <algorithm>
#include <numeric>

namespace tessera {

void HistoryKV::reserve(const CacheGeometry& geometry, int64_t max_tokens) {
  layers_ = geometry.layers;
  kv_heads_ = geometry.kv_heads;
  head_dim_ = geometry.head_dim;
  kv_width_ = static_cast<int64_t>(kv_heads_) * head_dim_;
  const auto floats = static_cast<std::size_t>(layers_ * max_tokens * kv_width_);
  k_.reserve(floats);
  v_.reserve(floats);
  positions_.reserve(static_cast<std::size_t>(max_tokens));
}

void HistoryKV::resize(int64_t count) {
  count_ = count;
  const auto floats = static_cast<std::size_t>(layers_ * count * kv_width_);
  k_.resize(floats);
  v_.resize(floats);
  const std::size_t known = positions_.size();
  if (known < static_cast<std::size_t>(count)) {
    positions_.resize(static_cast<std::size_t>(count));
    std::iota(positions_.begin() + static_cast<std::ptrdiff_t>(known), positions_.end(),
              static_cast<int32_t>(known));
  }
}

Tensor HistoryKV::tensor(std::vector<float>& data) const {
  return Tensor::contiguous(data.data(), DType::kF32, {layers_, count_, kv_heads_, head_dim_});
}

TransientKV HistoryKV::transient(SequenceId seq, int64_t begin, int64_t end) const {
  TransientKV t;
  t.seq = seq;
  t.k = k_.data() + begin * kv_width_;
  t.v = v_.data() + begin * kv_width_;
  t.layer_stride = layer_stride();
  t.positions =
      std::span<const int32_t>(positions_.data() + begin, static_cast<std::size_t>(end - begin));
  return t;
}

Status HistoryKV::append_to(CheckedCacheStore& cache, SequenceId seq, int64_t begin) {
  const int64_t m = count_ - begin;
  if (m <= 0) return ok_status();
  if (begin > 0) {
    // Layer l's rows [begin, count) to [l * m, (l + 1) * m): every move is
    // to an earlier place, so in order is safe.
    for (int l = 0; l < layers_; ++l)
      for (std::vector<float>* data : {&k_, &v_}) {
        const float* from = data->data() + l * layer_stride() + begin * kv_width_;
        std::copy(from, from + m * kv_width_, data->data() + l * m * kv_width_);
      }
  }
  const auto packed = [&](std::vector<float>& data) {
    return Tensor::contiguous(data.data(), DType::kF32, {layers_, m, kv_heads_, head_dim_});
  };
  const std::span<const int32_t> positions(positions_.data() + begin, static_cast<std::size_t>(m));
  const Status status = cache.append(seq, positions, {}, packed(k_), packed(v_));
  count_ = 0;  // consumed
  return status;
}

Status HistoryKV::compute(Transformer& model, CheckedCacheStore& cache, SequenceId seq,
                          std::span<const int32_t> tokens, int chunk, int64_t& forwards) {
  const auto n = static_cast<int64_t>(tokens.size());
  resize(n);
  const int64_t step = std::max(1, std::min(chunk, model.max_batch()));
  for (int64_t begin = 0; begin < n; begin += step) {
    const int64_t end = std::min(n, begin + step);
    batch_.clear();
    int32_t parent = -1;
    for (int64_t i = begin; i < end; ++i)
      parent =
          batch_.add(tokens[static_cast<std::size_t>(i)], seq, static_cast<int32_t>(i), parent, 0);
    const TransientKV earlier = transient(seq, 0, begin);
    ForwardOptions options;
    options.read_store = false;
    options.unwindowed = true;
    options.output_logits = false;
    options.transient = std::span<const TransientKV>(&earlier, 1);
    RETURN_IF_ERROR(model.forward(cache, batch_, options).status());
    ++forwards;
    // The chunk's K/V, layer by layer, into their rows of the history.
    const Tensor pk = model.pending_k(), pv = model.pending_v();
    if (pk.data == nullptr || pv.data == nullptr)
      return internal_error(
          "restoration: the forward's K/V could not be read back from the backend's memory");
    const int64_t rows = (end - begin) * kv_width_;
    for (int l = 0; l < layers_; ++l) {
      const int64_t from = l * rows, to = l * layer_stride() + begin * kv_width_;
      std::copy_n(pk.f32() + from, rows, k_.data() + to);
      std::copy_n(pv.f32() + from, rows, v_.data() + to);
    }
  }
  return ok_status();
}

}  // namespace tessera
