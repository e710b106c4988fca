// The engine configs the server tests run on.
#pragma once

namespace tessera::serve::testing_configs {

// Sessions batched continuously over a paged cache.
inline constexpr char kConfig[] =
    "[scheduler]\nplugin = \"continuous\"\n[cache]\nplugin = \"paged\"\nmax_tokens = 512\n";
// A window store never fills: a turn runs until its client leaves or cancels.
inline constexpr char kEndless[] =
    "[scheduler]\nplugin = \"continuous\"\n[cache]\nplugin = \"sink_window\"\nwindow = 32\n";

}  // namespace tessera::serve::testing_configs
