#include "core/cache/prefix_cache.h"

#include <algorithm>
#include <random>

namespace tessera {
namespace {

// splitmix64's finaliser: every input bit moves every output bit.
uint64_t mix(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x;
}

uint64_t hash_text(std::string_view text) {
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a, then mixed
  for (const char c : text) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ull;
  }
  return mix(h);
}

}  // namespace

PrefixCache::PrefixCache(CheckedCacheStore& store, std::string_view identity,
                         std::size_t budget_bytes)
    : store_(store),
      budget_bytes_(budget_bytes),
      block_size_(store.shared_block_size()),
      block_bytes_(store.shared_block_bytes()) {
  // A salt per process: keys nobody outside can predict, so no client can
  // aim collisions at another's blocks (a collision would only be a miss).
  std::random_device entropy;
  identity_ = mix(hash_text(identity) ^ ((uint64_t{entropy()} << 32) | entropy()));
  stats_.budget_bytes = budget_bytes;
  stats_.block_size = block_size_;
}

PrefixCache::~PrefixCache() {
  for (const auto& [key, entry] : entries_) (void)store_.drop_block(entry.block);
}

uint64_t PrefixCache::key_of(uint64_t parent, std::span<const int32_t> tokens) const {
  uint64_t h = mix(parent ^ 0x9e3779b97f4a7c15ull);
  for (const int32_t token : tokens) h = mix(h ^ (static_cast<uint32_t>(token) + (h << 6)));
  return h;
}

PrefixCache::Entry* PrefixCache::match(uint64_t key, uint64_t parent,
                                       std::span<const int32_t> tokens) {
  const auto it = entries_.find(key);
  if (it == entries_.end() || it->second.parent != parent ||
      !std::equal(tokens.begin(), tokens.end(), it->second.tokens.begin(), it->second.tokens.end()))
    return nullptr;
  return &it->second;
}

void PrefixCache::touch(uint64_t key, Entry& entry) {
  if (entry.children == 0) leaves_.erase({entry.last_use, key});
  entry.last_use = ++clock_;
  if (entry.children == 0) leaves_.insert({entry.last_use, key});
}

Result<int64_t> PrefixCache::adopt(SequenceId seq, std::span<const int32_t> tokens,
                                   int64_t keep_uncached) {
  ++stats_.lookups;
  stats_.tokens_looked_up += static_cast<int64_t>(tokens.size());
  const int64_t limit = static_cast<int64_t>(tokens.size()) - keep_uncached;
  std::vector<SharedBlock> blocks;
  std::vector<std::pair<uint64_t, Entry*>> chain;
  uint64_t parent = identity_;
  for (int64_t first = 0; first + block_size_ <= limit; first += block_size_) {
    const auto block =
        tokens.subspan(static_cast<std::size_t>(first), static_cast<std::size_t>(block_size_));
    const uint64_t key = key_of(parent, block);
    Entry* entry = match(key, parent, block);
    if (entry == nullptr) break;
    blocks.push_back(entry->block);
    chain.emplace_back(key, entry);
    parent = key;
  }
  if (blocks.empty()) return int64_t{0};
  RETURN_IF_ERROR(store_.adopt_blocks(seq, blocks).with_context("prefix cache"));
  // The chain's root first, so its deepest block is the newest.
  for (auto& [key, entry] : chain) touch(key, *entry);
  const int64_t reused = static_cast<int64_t>(blocks.size()) * block_size_;
  ++stats_.hits;
  stats_.tokens_reused += reused;
  return reused;
}

Status PrefixCache::publish(SequenceId seq, std::span<const int32_t> tokens) {
  uint64_t parent = identity_;
  Entry* parent_entry = nullptr;
  for (int64_t b = 0; (b + 1) * block_size_ <= static_cast<int64_t>(tokens.size()); ++b) {
    const auto block = tokens.subspan(static_cast<std::size_t>(b * block_size_),
                                      static_cast<std::size_t>(block_size_));
    const uint64_t key = key_of(parent, block);
    Entry* entry = match(key, parent, block);
    if (entry == nullptr) {
      // Taken by another chain (a collision), or not plain: the chain ends.
      if (entries_.count(key) != 0) break;
      Result<SharedBlock> held = store_.hold_block(seq, b);
      if (!held.ok()) {
        if (held.status().code() == StatusCode::kFailedPrecondition) break;
        return held.status().with_context("prefix cache");
      }
      Entry fresh;
      fresh.block = *held;
      fresh.parent = parent;
      fresh.tokens.assign(block.begin(), block.end());
      fresh.last_use = ++clock_;
      entry = &entries_.emplace(key, std::move(fresh)).first->second;
      leaves_.insert({entry->last_use, key});
      if (parent_entry != nullptr && parent_entry->children++ == 0)
        leaves_.erase({parent_entry->last_use, parent});
      ++stats_.inserted;
    } else {
      touch(key, *entry);
    }
    parent = key;
    parent_entry = entry;
  }
  return evict_to(budget_bytes_);
}

Status PrefixCache::evict_to(std::size_t budget) {
  while (!leaves_.empty() && entries_.size() * block_bytes_ > budget) {
    const uint64_t key = leaves_.begin()->second;
    leaves_.erase(leaves_.begin());
    const auto it = entries_.find(key);
    const uint64_t parent = it->second.parent;
    const SharedBlock block = it->second.block;
    entries_.erase(it);
    ++stats_.evicted;
    if (const auto up = entries_.find(parent); up != entries_.end() && --up->second.children == 0)
      leaves_.insert({up->second.last_use, parent});
    RETURN_IF_ERROR(store_.drop_block(block).with_context("prefix cache"));
  }
  return ok_status();
}

PrefixCacheStats PrefixCache::stats() const {
  PrefixCacheStats out = stats_;
  out.blocks = static_cast<int64_t>(entries_.size());
  out.bytes = entries_.size() * block_bytes_;
  return out;
}

}  // namespace tessera
