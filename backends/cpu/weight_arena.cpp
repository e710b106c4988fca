#include "backends/cpu/weight_arena.h"

#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <unordered_map>
#include <vector>

#include "backends/cpu/interleaved_rows.h"

namespace tessera::cpu {
namespace {

constexpr std::size_t kAlignment = 64;

std::size_t aligned(std::size_t bytes) {
  return (bytes + kAlignment - 1) / kAlignment * kAlignment;
}

// Where each distinct tensor (by data pointer) goes in the arena, and the
// arena's size.
struct Place {
  std::size_t offset, bytes;
};
struct Layout {
  std::unordered_map<const void*, Place> places;
  std::size_t total = 0;
};

Layout layout_of(std::span<Tensor* const> weights) {
  Layout layout;
  for (const Tensor* t : weights)
    if (t->data != nullptr &&
        layout.places.emplace(t->data, Place{layout.total, t->bytes()}).second)
      layout.total += aligned(t->bytes());
  return layout;
}

// The bytes of one group of interleaved rows of a [rows, k] matrix.
std::size_t group_bytes(const Tensor& t) {
  return dtype_row_bytes(t.dtype, t.dim(1)) * static_cast<std::size_t>(group_rows(t.dtype));
}

}  // namespace

WeightArena::~WeightArena() {
  if (base_ != nullptr) ::munmap(base_, size_);
}

std::size_t WeightArena::bytes_needed(std::span<Tensor* const> weights) {
  return layout_of(weights).total;
}

Status WeightArena::copy(std::span<Tensor* const> weights, ThreadPool& pool,
                         const std::function<bool(DType)>& interleave) {
  if (base_ != nullptr) return failed_precondition("cpu weights: already copied");
  const Layout layout = layout_of(weights);
  const std::size_t total = layout.total;
  if (total == 0) return ok_status();
  void* base = ::mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (base == MAP_FAILED)
    return resource_exhausted("cpu weights: cannot map " + std::to_string(total) +
                              " bytes for a copy of the weights: " + std::strerror(errno) +
                              "; set [backend] weights = \"mapped\" to read them from the file");
  // Huge pages where the kernel grants them: fewer TLB misses while decoding
  // streams every weight once per token. Advice only: failure changes nothing.
  ::madvise(base, total, MADV_HUGEPAGE);
  auto* arena = static_cast<uint8_t*>(base);
  // Which tensors go in groups of interleaved rows (by data pointer).
  std::unordered_map<const void*, const Tensor*> to_interleave;
  if (interleave)
    for (const Tensor* t : weights)
      if (t->data != nullptr && t->rank == 2 && t->is_contiguous() &&
          interleavable(t->dtype, t->dim(0), t->dim(1)) && interleave(t->dtype))
        to_interleave.emplace(t->data, t);
  // The copy in pieces of about 4 MiB (whole groups when interleaving),
  // spread over the threads.
  struct Piece {
    uint8_t* to;
    const uint8_t* from;
    std::size_t bytes;
    const Tensor* interleaved;  // or null: a plain copy
  };
  constexpr std::size_t kPiece = std::size_t{4} << 20;
  std::vector<Piece> pieces;
  for (const auto& [data, place] : layout.places) {
    const auto found = to_interleave.find(data);
    const Tensor* grouped = found == to_interleave.end() ? nullptr : found->second;
    // An interleaved tensor's pieces are whole groups of rows.
    const std::size_t unit = grouped == nullptr ? 1 : group_bytes(*grouped);
    const std::size_t step = std::max<std::size_t>(1, kPiece / unit) * unit;
    for (std::size_t done = 0; done < place.bytes; done += step)
      pieces.push_back({arena + place.offset + done, static_cast<const uint8_t*>(data) + done,
                        std::min(step, place.bytes - done), grouped});
    if (grouped != nullptr) interleaved_.insert(arena + place.offset);
  }
  pool.parallel_for(0, static_cast<int64_t>(pieces.size()), [&](int64_t begin, int64_t end, int) {
    for (int64_t i = begin; i < end; ++i) {
      const Piece& piece = pieces[static_cast<std::size_t>(i)];
      if (piece.interleaved == nullptr) {
        std::memcpy(piece.to, piece.from, piece.bytes);
        continue;
      }
      const Tensor& t = *piece.interleaved;
      const std::size_t step = group_bytes(t);
      for (std::size_t g = 0; g < piece.bytes; g += step) {
        if (piece.bytes - g < step) {  // the rows past the last whole group stay plain
          std::memcpy(piece.to + g, piece.from + g, piece.bytes - g);
          break;
        }
        interleave_group(t.dtype, piece.from + g, dtype_row_bytes(t.dtype, t.dim(1)), t.dim(1),
                         piece.to + g);
      }
    }
  });
  for (Tensor* t : weights)
    if (t->data != nullptr) t->data = arena + layout.places.at(t->data).offset;
  base_ = base;
  size_ = total;
  return ok_status();
}

}  // namespace tessera::cpu
