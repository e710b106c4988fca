// How the SIMD kernels walk a panel (dot_kernels.h): rows in blocks that stay
// in cache while every token passes over them, and inside a block, register
// tiles of up to R rows times T tokens. A tile kernel is a template
// Tile<rows, tokens>::run(panel, first_row, first_token) for every size up to
// R x T, so panel edges run the same code with fewer rows or tokens (and the
// same summation order per output).
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <utility>

namespace tessera::cpu {

template <typename Panel, int R, int T>
using TileTable = std::array<std::array<void (*)(const Panel&, int64_t, int64_t), T>, R>;

template <typename Panel, int T, template <int, int> class Tile, int r, int... t>
constexpr std::array<void (*)(const Panel&, int64_t, int64_t), T> tile_row(
    std::integer_sequence<int, t...>) {
  return {&Tile<r + 1, t + 1>::run...};
}

template <typename Panel, int R, int T, template <int, int> class Tile, int... r>
constexpr TileTable<Panel, R, T> tile_rows(std::integer_sequence<int, r...>) {
  return {tile_row<Panel, T, Tile, r>(std::make_integer_sequence<int, T>{})...};
}

// table[rows - 1][tokens - 1] = &Tile<rows, tokens>::run.
template <typename Panel, int R, int T, template <int, int> class Tile>
constexpr TileTable<Panel, R, T> make_tile_table() {
  return tile_rows<Panel, R, T, Tile>(std::make_integer_sequence<int, R>{});
}

// Row blocks of about `block_bytes` of weights (at least one tile of rows).
template <typename Panel, std::size_t R, std::size_t T>
void for_each_tile(
    const Panel& panel,
    const std::array<std::array<void (*)(const Panel&, int64_t, int64_t), T>, R>& tiles,
    std::size_t block_bytes = 96 * 1024) {
  constexpr auto kRows = static_cast<int64_t>(R), kTokens = static_cast<int64_t>(T);
  const auto fitting =
      static_cast<int64_t>(block_bytes / std::max<std::size_t>(panel.row_bytes, 1));
  const int64_t block_rows = std::max(kRows, fitting / kRows * kRows);
  for (int64_t first = 0; first < panel.rows; first += block_rows) {
    const int64_t last = std::min(panel.rows, first + block_rows);
    for (int64_t t = 0; t < panel.tokens; t += kTokens) {
      const int64_t tokens = std::min(kTokens, panel.tokens - t);
      for (int64_t r = first; r < last; r += kRows) {
        const int64_t rows = std::min(kRows, last - r);
        tiles[static_cast<std::size_t>(rows - 1)][static_cast<std::size_t>(tokens - 1)](panel, r,
                                                                                        t);
      }
    }
  }
}

// A panel kernel: one token (decode) walks tiles of DecodeRows rows, whose
// only reuse is the token's activations; prompts walk PromptRows x
// PromptTokens tiles.
template <typename Panel, int DecodeRows, int PromptRows, int PromptTokens,
          template <int, int> class Tile>
void tiled_panel(const Panel& panel) {
  static constexpr auto decode = make_tile_table<Panel, DecodeRows, 1, Tile>();
  static constexpr auto prompt = make_tile_table<Panel, PromptRows, PromptTokens, Tile>();
  if (panel.tokens == 1)
    for_each_tile(panel, decode);
  else
    for_each_tile(panel, prompt);
}

template <typename Panel, typename Tiles, int... t>
constexpr std::array<void (*)(const Panel&, int64_t, int64_t, int), sizeof...(t)> group_tile_table(
    std::integer_sequence<int, t...>) {
  return {&Tiles::template run<t + 1>...};
}

// One token (decode) over groups of TileRows rows: kStreams groups at a
// time, one from each of kStreams equal parts of the panel,
// Tiles::run_streams<kStreams>(panel, first_rows), then the rest of the
// groups one at a time. One core keeps more lines in flight reading four
// places at once than one (memory_bandwidth_bench: "read 4 streams" against
// "read"); every output is the same sum as run<1> would make.
template <typename Panel, typename Tiles, int TileRows, int kStreams>
void group_decode_streams(const Panel& p) {
  const int64_t per_stream = p.rows / TileRows / kStreams;
  for (int64_t g = 0; g < per_stream; ++g) {
    int64_t first[kStreams];
    for (int s = 0; s < kStreams; ++s) first[s] = (s * per_stream + g) * TileRows;
    Tiles::template run_streams<kStreams>(p, first);
  }
  for (int64_t r = kStreams * per_stream * TileRows; r < p.rows; r += TileRows)
    Tiles::template run<1>(p, r, 0, static_cast<int>(std::min<int64_t>(TileRows, p.rows - r)));
}

// Weights interleaved in groups of rows (interleaved_rows.h): tiles of
// TileRows rows (a group, or part of one) times up to T tokens,
// Tiles::run<tokens>(panel, first_row, first_token, rows), in row blocks
// that stay in cache while every token passes; decode through
// group_decode_streams where Tiles has kDecodeStreams.
template <typename Panel, typename Tiles, int TileRows, int T>
void group_panel(const Panel& p) {
  if constexpr (requires { Tiles::kDecodeStreams; }) {
    if (p.tokens == 1)
      return group_decode_streams<Panel, Tiles, TileRows, Tiles::kDecodeStreams>(p);
  }
  static constexpr auto tiles =
      group_tile_table<Panel, Tiles>(std::make_integer_sequence<int, T>{});
  const auto tile_bytes = static_cast<std::size_t>(TileRows) * p.row_bytes;
  const int64_t block_rows =
      TileRows * std::max<int64_t>(1, static_cast<int64_t>((96 * 1024) / tile_bytes));
  for (int64_t first = 0; first < p.rows; first += block_rows) {
    const int64_t last = std::min(p.rows, first + block_rows);
    for (int64_t t = 0; t < p.tokens; t += T) {
      const int64_t tokens = std::min<int64_t>(T, p.tokens - t);
      for (int64_t r = first; r < last; r += TileRows)
        tiles[static_cast<std::size_t>(tokens - 1)](
            p, r, t, static_cast<int>(std::min<int64_t>(TileRows, last - r)));
    }
  }
}

}  // namespace tessera::cpu
