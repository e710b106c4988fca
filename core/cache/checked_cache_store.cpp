#include "core/cache/checked_cache_store.h"

#include <algorithm>
#include <functional>
#include <utility>

#include "core/backend/backend.h"
#include "core/compressor/compressor.h"

namespace tessera {
namespace {

std::string str(int64_t v) {
  return std::to_string(v);
}

std::string seq_name(SequenceId seq) {
  return "sequence " + std::to_string(seq);
}

}  // namespace

CheckedCacheStore::CheckedCacheStore(std::unique_ptr<CacheStore> store, std::string plugin_name) {
  Group first;
  first.store = std::make_unique<CheckedStore>(std::move(store), std::move(plugin_name));
  groups_.push_back(std::move(first));
}

CheckedCacheStore::~CheckedCacheStore() = default;

Status CheckedCacheStore::give_layers_to(std::unique_ptr<CacheStore> store, std::string plugin_name,
                                         std::vector<int> layers, std::string role) {
  if (ready_) return failed_precondition("cache: layer groups are set before init()");
  if (store == nullptr || layers.empty())
    return invalid_argument("cache: a layer group needs a store and at least one layer");
  std::sort(layers.begin(), layers.end());
  for (std::size_t i = 1; i < groups_.size(); ++i)
    for (const int l : groups_[i].layers)
      if (std::binary_search(layers.begin(), layers.end(), l))
        return invalid_argument("cache: layer " + str(l) + " is given to two groups");
  Group group;
  group.store = std::make_unique<CheckedStore>(std::move(store), std::move(plugin_name));
  group.role = std::move(role);
  group.layers = std::move(layers);
  groups_.push_back(std::move(group));
  return ok_status();
}

Status CheckedCacheStore::init(const CacheGeometry& geometry,
                               std::span<const Compressor* const> layer_codecs,
                               StoredKeys stored_keys, Backend* kv_backend) {
  if (ready_) return failed_precondition("cache '" + plugin_name() + "': init() called twice");
  if (groups_.size() == 1) {
    RETURN_IF_ERROR(groups_.front().store->init(geometry, layer_codecs, stored_keys, kv_backend));
    for (int l = 0; l < geometry.layers; ++l) places_.push_back({0, l});
    kv_in_backend_ = groups_.front().store->kv_in_backend();
  } else {
    if (geometry.layers <= 0 || layer_codecs.size() != static_cast<std::size_t>(geometry.layers))
      return invalid_argument("cache '" + plugin_name() +
                              "': " + str(static_cast<int64_t>(layer_codecs.size())) +
                              " codecs for " + str(geometry.layers) + " layers");
    places_.assign(static_cast<std::size_t>(geometry.layers), LayerPlace{-1, 0});
    for (std::size_t g = 1; g < groups_.size(); ++g)
      for (const int l : groups_[g].layers) {
        if (l < 0 || l >= geometry.layers)
          return invalid_argument("cache: layer " + str(l) + " given to " + groups_[g].role +
                                  " is outside the model's " + str(geometry.layers) + " layers");
        places_[static_cast<std::size_t>(l)] = {static_cast<int>(g), 0};
      }
    Group& first = groups_.front();
    first.layers.clear();
    for (int l = 0; l < geometry.layers; ++l)
      if (places_[static_cast<std::size_t>(l)].group < 0) first.layers.push_back(l);
    if (first.layers.empty())
      return invalid_argument("cache '" + plugin_name() +
                              "': every layer is given to another group");
    // Every group's K/V in one place: the first store decides, the others are
    // offered the backend only when every layer keeps its K/V there by the
    // stores' rule (backend_keeps_kv), so that they follow.
    const bool fits =
        kv_backend != nullptr &&
        std::all_of(layer_codecs.begin(), layer_codecs.end(), [&](const Compressor* c) {
          return backend_keeps_kv(*kv_backend, *c, geometry.heads_per_vector, geometry.head_dim);
        });
    for (std::size_t g = 0; g < groups_.size(); ++g) {
      Group& group = groups_[g];
      group.codecs.clear();
      for (std::size_t i = 0; i < group.layers.size(); ++i) {
        const auto l = static_cast<std::size_t>(group.layers[i]);
        places_[l] = {static_cast<int>(g), static_cast<int>(i)};
        group.codecs.push_back(layer_codecs[l]);
      }
      CacheGeometry part = geometry;
      part.layers = static_cast<int>(group.layers.size());
      const bool offer = fits && (g == 0 || groups_.front().store->kv_in_backend());
      Status st = group.store->init(part, group.codecs, stored_keys, offer ? kv_backend : nullptr);
      if (!st.ok()) return g == 0 ? st : st.with_context("the store of the " + group.role);
      if (g > 0 && offer && !group.store->kv_in_backend())
        return internal_error("cache: the store of the " + group.role +
                              " keeps its K/V on the host while the first group's are in the "
                              "backend's memory (a store that does not follow KVPlacement)");
    }
    kv_in_backend_ = groups_.front().store->kv_in_backend();
  }
  kv_backend_ = kv_in_backend_ ? kv_backend : nullptr;
  geometry_ = geometry;
  stored_keys_ = stored_keys;
  codecs_.assign(layer_codecs.begin(), layer_codecs.end());
  policy_ = groups_.front().store->policy();
  for (const Group& group : groups_)
    policy_.keeps_branches = policy_.keeps_branches && group.store->policy().keeps_branches;
  ready_ = true;
  note_peak();
  return ok_status();
}

Status CheckedCacheStore::add_to_every_group(SequenceId seq,
                                             const std::function<Status(CheckedStore&)>& add) {
  for (std::size_t g = 0; g < groups_.size(); ++g) {
    Status st = add(*groups_[g].store);
    if (!st.ok()) {
      for (std::size_t done = 0; done < g; ++done) (void)groups_[done].store->release(seq);
      return g == 0 ? st : st.with_context("the store of the " + groups_[g].role);
    }
  }
  note_peak();
  return ok_status();
}

Status CheckedCacheStore::allocate(SequenceId seq, int64_t capacity) {
  return add_to_every_group(seq, [&](CheckedStore& s) { return s.allocate(seq, capacity); });
}

Status CheckedCacheStore::release(SequenceId seq) {
  for (Group& group : groups_) RETURN_IF_ERROR(group.store->release(seq));
  return ok_status();
}

Status CheckedCacheStore::fork(SequenceId src, SequenceId dst) {
  return add_to_every_group(dst, [&](CheckedStore& s) { return s.fork(src, dst); });
}

Result<Tensor> CheckedCacheStore::group_part(Group& group, const Tensor& t, bool is_k) {
  if (groups_.size() == 1) return t;
  if (!t.on_host()) {
    // [layers, n, kv_heads, head_dim] in the backend's memory -> this group's
    // layers, contiguous, by one strided copy per run of consecutive layers.
    const int64_t n = t.dim(1), kv = geometry_.kv_heads, hd = geometry_.head_dim;
    const auto layers = static_cast<int64_t>(group.layers.size());
    const std::size_t bytes = static_cast<std::size_t>(layers * n * kv * hd) * sizeof(float);
    std::unique_ptr<Buffer>& scratch = is_k ? group.k_device : group.v_device;
    if (!scratch || scratch->size() < bytes) {
      ASSIGN_OR_RETURN(scratch, kv_backend_->allocate(std::max(bytes, std::size_t{4096}),
                                                      BufferUsage::kActivations));
    }
    const Tensor part = Tensor::in_buffer(*scratch, 0, DType::kF32, {layers, n, kv, hd});
    for (int64_t i = 0; i < layers;) {
      int64_t end = i + 1;
      while (end < layers && group.layers[static_cast<std::size_t>(end)] ==
                                 group.layers[static_cast<std::size_t>(end - 1)] + 1)
        ++end;
      const int64_t l = group.layers[static_cast<std::size_t>(i)];
      RETURN_IF_ERROR(kv_backend_->copy(
          t.view(l * t.stride[0], {end - i, n, kv, hd}, {t.stride[0], t.stride[1], t.stride[2], 1}),
          part.view(i * n * kv * hd, {end - i, n, kv, hd}, {n * kv * hd, kv * hd, hd, 1})));
      i = end;
    }
    return part;
  }
  // [layers, n, kv_heads, head_dim] -> this group's layers, contiguous.
  const int64_t n = t.dim(1);
  const int64_t width = static_cast<int64_t>(geometry_.kv_heads) * geometry_.head_dim;
  const auto layers = static_cast<int64_t>(group.layers.size());
  std::vector<float>& scratch = is_k ? group.k_scratch : group.v_scratch;
  const auto floats = static_cast<std::size_t>(layers * n * width);
  if (scratch.size() < floats) scratch.resize(floats);
  const float* src = t.f32();
  for (int64_t i = 0; i < layers; ++i) {
    const int64_t l = group.layers[static_cast<std::size_t>(i)];
    for (int64_t r = 0; r < n; ++r)
      for (int h = 0; h < geometry_.kv_heads; ++h)
        std::copy_n(src + l * t.stride[0] + r * t.stride[1] + h * t.stride[2], geometry_.head_dim,
                    scratch.data() + (i * n + r) * width + h * geometry_.head_dim);
  }
  return Tensor::contiguous(scratch.data(), DType::kF32,
                            {layers, n, geometry_.kv_heads, geometry_.head_dim});
}

Status CheckedCacheStore::undo_before(std::size_t failed, SequenceId seq, int64_t logical_length,
                                      const Status& why) {
  for (std::size_t g = 0; g < failed; ++g) {
    const Status undone = groups_[g].store->truncate(seq, logical_length);
    if (!undone.ok())
      return internal_error("cache: the " + groups_[failed].role + " refused a change of " +
                            seq_name(seq) + " (" + why.message() + ") and the layers before " +
                            "could not be taken back: " + undone.message());
  }
  return why.with_context("the store of the " + groups_[failed].role);
}

Status CheckedCacheStore::append(SequenceId seq, std::span<const int32_t> positions,
                                 std::span<const BranchId> branches, const Tensor& k,
                                 const Tensor& v) {
  if (groups_.size() == 1) {
    RETURN_IF_ERROR(groups_.front().store->append(seq, positions, branches, k, v));
    note_peak();
    return ok_status();
  }
  ASSIGN_OR_RETURN(const SequenceInfo before, groups_.front().store->info(seq));
  for (const BranchId b : branches)
    if (b != 0)
      return invalid_argument("cache '" + plugin_name() + "': append to " + seq_name(seq) +
                              ": an entry of branch " + str(b) + ", but this model's " +
                              groups_.back().role +
                              " are kept in a store without branches; "
                              "use decode.branch_layout = \"batched\"");
  // The full tensors' shapes are checked here, the groups' parts by each group.
  const bool shaped = k.dtype == DType::kF32 && v.dtype == DType::kF32 && k.rank == 4 &&
                      v.rank == 4 && k.dim(0) == geometry_.layers && v.dim(0) == geometry_.layers &&
                      k.dim(1) == static_cast<int64_t>(positions.size()) && v.dim(1) == k.dim(1) &&
                      k.dim(2) == geometry_.kv_heads && v.dim(2) == geometry_.kv_heads &&
                      k.dim(3) == geometry_.head_dim && v.dim(3) == geometry_.head_dim &&
                      k.stride[3] == 1 && v.stride[3] == 1 &&
                      (positions.empty() || kv_in_backend_ || (k.on_host() && v.on_host()));
  if (!shaped)
    return invalid_argument("cache '" + plugin_name() + "': append: k is " + k.describe() +
                            " and v " + v.describe() + ", expected f32 [" + str(geometry_.layers) +
                            ", " + str(static_cast<int64_t>(positions.size())) + ", " +
                            str(geometry_.kv_heads) + ", " + str(geometry_.head_dim) +
                            "] with contiguous head_dim");
  for (std::size_t g = 0; g < groups_.size(); ++g) {
    Group& group = groups_[g];
    Result<Tensor> k_part = group_part(group, k, true);
    Result<Tensor> v_part = k_part.ok() ? group_part(group, v, false) : k_part;
    const Status st =
        v_part.ok() ? group.store->append(seq, positions, branches, k_part.value(), v_part.value())
                    : v_part.status();
    if (!st.ok()) return g == 0 ? st : undo_before(g, seq, before.logical_length, st);
  }
  note_peak();
  return ok_status();
}

Result<DenseLayerKV> CheckedCacheStore::dense_layer(SequenceId seq, int layer) {
  ASSIGN_OR_RETURN(const LayerPlace* place, place_of(layer, "dense_layer"));
  return groups_[static_cast<std::size_t>(place->group)].store->dense_layer(seq, place->local);
}

Status CheckedCacheStore::append_in_place(SequenceId seq, std::span<const int32_t> positions) {
  if (groups_.size() > 1)
    return failed_precondition("cache '" + plugin_name() + "': entries written in place need " +
                               "one store for every layer, but this model's " +
                               groups_.back().role + " are kept apart");
  RETURN_IF_ERROR(groups_.front().store->append_in_place(seq, positions));
  note_peak();
  return ok_status();
}

Status CheckedCacheStore::truncate(SequenceId seq, int64_t logical_length) {
  if (groups_.size() > 1) {
    ASSIGN_OR_RETURN(const SequenceInfo now, info(seq));
    if (logical_length >= 0 && logical_length <= now.logical_length &&
        logical_length < now.min_truncatable)
      return failed_precondition("cache '" + plugin_name() + "': truncate " + seq_name(seq) +
                                 " to " + str(logical_length) + " tokens: the " +
                                 groups_.back().role + " keep only their window (it can go " +
                                 "back to " + str(now.min_truncatable) + " at the least)");
  }
  for (std::size_t g = 0; g < groups_.size(); ++g) {
    const Status st = groups_[g].store->truncate(seq, logical_length);
    if (!st.ok()) {
      if (g == 0) return st;
      return internal_error("cache: the " + groups_[g].role + " refused to truncate " +
                            seq_name(seq) + " after the other layers did: " + st.message());
    }
  }
  return ok_status();
}

Status CheckedCacheStore::copy(SequenceId seq, std::span<const int64_t> src, int64_t dst_start) {
  if (groups_.size() == 1) {
    RETURN_IF_ERROR(groups_.front().store->copy(seq, src, dst_start));
    note_peak();
    return ok_status();
  }
  // Each later group holds the newest of the first group's entries: shift
  // the indices by what it no longer holds, refusing before anything moves.
  ASSIGN_OR_RETURN(const SequenceInfo first, groups_.front().store->info(seq));
  std::vector<int64_t> offsets(groups_.size(), 0);
  for (std::size_t g = 1; g < groups_.size(); ++g) {
    ASSIGN_OR_RETURN(const SequenceInfo mine, groups_[g].store->info(seq));
    offsets[g] = first.stored - mine.stored;
    if (dst_start < offsets[g])
      return unimplemented("cache '" + plugin_name() + "': copy in " + seq_name(seq) +
                           " to entry " + str(dst_start) + ": the " + groups_[g].role +
                           " no longer hold it (they keep the last " + str(mine.stored) + ")");
  }
  RETURN_IF_ERROR(groups_.front().store->copy(seq, src, dst_start));
  std::vector<int64_t> shifted(src.size());
  for (std::size_t g = 1; g < groups_.size(); ++g) {
    for (std::size_t j = 0; j < src.size(); ++j) shifted[j] = src[j] - offsets[g];
    const Status st = groups_[g].store->copy(seq, shifted, dst_start - offsets[g]);
    if (!st.ok())
      return internal_error("cache: the " + groups_[g].role + " refused a copy in " +
                            seq_name(seq) + " the other layers made: " + st.message());
  }
  note_peak();
  return ok_status();
}

Result<const CheckedCacheStore::LayerPlace*> CheckedCacheStore::place_of(
    int layer, std::string_view op) const {
  if (!ready_)
    return failed_precondition("cache '" + plugin_name() + "': used before a successful init()");
  if (layer < 0 || layer >= static_cast<int>(places_.size()))
    return out_of_range("cache '" + plugin_name() + "': " + std::string(op) + " of layer " +
                        str(layer) + ", but the model has " + str(geometry_.layers) + " layers");
  return &places_[static_cast<std::size_t>(layer)];
}

Result<KVView> CheckedCacheStore::view(SequenceId seq, int layer) {
  ASSIGN_OR_RETURN(const LayerPlace* place, place_of(layer, "view"));
  return groups_[static_cast<std::size_t>(place->group)].store->view(seq, place->local);
}

Result<KVView> CheckedCacheStore::encoded_view(SequenceId seq, int layer) {
  ASSIGN_OR_RETURN(const LayerPlace* place, place_of(layer, "view"));
  return groups_[static_cast<std::size_t>(place->group)].store->encoded_view(seq, place->local);
}

Result<SequenceInfo> CheckedCacheStore::info(SequenceId seq) const {
  ASSIGN_OR_RETURN(SequenceInfo first, groups_.front().store->info(seq));
  for (std::size_t g = 1; g < groups_.size(); ++g) {
    ASSIGN_OR_RETURN(const SequenceInfo mine, groups_[g].store->info(seq));
    first.min_truncatable = std::max(first.min_truncatable, mine.min_truncatable);
  }
  return first;
}

Result<int64_t> CheckedCacheStore::stored_length(SequenceId seq, int layer, int kv) const {
  ASSIGN_OR_RETURN(const LayerPlace* place, place_of(layer, "stored_length"));
  return groups_[static_cast<std::size_t>(place->group)].store->stored_length(seq, place->local,
                                                                              kv);
}

Result<std::span<const int32_t>> CheckedCacheStore::positions(SequenceId seq) const {
  return groups_.front().store->positions(seq);
}

Result<std::span<const BranchId>> CheckedCacheStore::branches(SequenceId seq) const {
  return groups_.front().store->branches(seq);
}

Result<SequenceBytes> CheckedCacheStore::sequence_bytes(SequenceId seq) const {
  SequenceBytes total;
  for (const Group& group : groups_) {
    ASSIGN_OR_RETURN(const SequenceBytes mine, group.store->sequence_bytes(seq));
    total.held += mine.held;
    total.shared += mine.shared;
  }
  return total;
}

CacheBytes CheckedCacheStore::bytes() const {
  if (groups_.size() == 1) return groups_.front().store->bytes();
  CacheBytes total;
  for (const Group& group : groups_) {
    const CacheBytes b = group.store->bytes();
    total.live += b.live;
    total.capacity += b.capacity;
    total.copied += b.copied;
  }
  total.peak = std::max(peak_, total.live);
  return total;
}

void CheckedCacheStore::note_peak() const {
  if (groups_.size() > 1) peak_ = bytes().peak;
}

std::string CheckedCacheStore::describe_groups() const {
  std::string out;
  for (const Group& group : groups_) {
    if (!out.empty()) out += "; ";
    out += group.store->plugin_name();
    if (!group.role.empty()) out += " (" + group.role + ")";
    out += ": ";
    if (groups_.size() == 1) {
      out += "every layer";
      continue;
    }
    out += "layers ";
    for (std::size_t i = 0; i < group.layers.size(); ++i)
      out += (i > 0 ? ", " : "") + str(group.layers[i]);
  }
  return out;
}

}  // namespace tessera
