// Time to first token of a turn on a long history, the second half of
// `tessera bench --serve`: tessera keeps the history in a gRPC session (a
// turn appends only its new line), or gets the whole conversation each turn
// over HTTP and reuses its prefix cache; llama-server gets the whole
// conversation and reuses its slot's prompt cache for the common prefix. All
// timed from the turn's first request to its first token.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status/status.h"

namespace tessera::cli::serve_bench {

struct TtftFigures {
  int64_t history = 0;  // tokens before the first turn
  double first_ms = 0;  // the first turn: the whole history fed
  double kept_ms = 0;   // later turns (median): only the new line fed
  int later_turns = 0;
};

// Token ids of `text` by the tessera server's tokenizer (gRPC Tokenize).
Result<std::vector<int32_t>> tokenize_over_grpc(const std::string& address, const std::string& text,
                                                bool add_bos);

// `lines.size()` later turns after a first on `history`; every turn
// generates `reply_tokens` greedy tokens.
Result<TtftFigures> tessera_session_ttft(const std::string& grpc_address,
                                         const std::vector<int32_t>& history,
                                         const std::vector<std::vector<int32_t>>& lines,
                                         int64_t reply_tokens);
// The whole conversation resent each turn over HTTP (/v1/completions with
// token ids), as an OpenAI client does: llama-server reuses its slot's prompt
// cache, tessera serve its prefix cache. `server` names it in errors.
Result<TtftFigures> resent_conversation_ttft(const std::string& server, int http_port,
                                             const std::vector<int32_t>& history,
                                             const std::vector<std::vector<int32_t>>& lines,
                                             int64_t reply_tokens);

}  // namespace tessera::cli::serve_bench
