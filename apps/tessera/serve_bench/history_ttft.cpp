#include "apps/tessera/serve_bench/history_ttft.h"

#include <grpcpp/grpcpp.h>

#include <chrono>

#include "apps/tessera/serve_bench/openai_load.h"
#include "apps/tessera/sweep/median.h"
#include "proto/tessera/v1/runtime.grpc.pb.h"

namespace tessera::cli::serve_bench {

using Clock = std::chrono::steady_clock;

namespace {

Status from_grpc(const grpc::Status& status, const char* call) {
  if (status.ok()) return ok_status();
  return failed_precondition(std::string("tessera serve refused ") + call + ": " +
                             status.error_message());
}

// One turn on a kept session: append `line` (none on the first turn), then
// generate; milliseconds from the append to the first token.
Result<double> session_turn(v1::Runtime::Stub& stub, const std::string& id,
                            const std::vector<int32_t>& line, int64_t reply_tokens) {
  const auto start = Clock::now();
  {
    grpc::ClientContext context;
    v1::AppendTokensRequest request;
    request.set_session_id(id);
    for (const int32_t t : line) request.add_tokens(t);
    v1::AppendTokensResponse response;
    RETURN_IF_ERROR(from_grpc(stub.AppendTokens(&context, request, &response), "AppendTokens"));
  }
  grpc::ClientContext context;
  v1::GenerateRequest request;
  request.set_session_id(id);
  request.set_max_tokens(reply_tokens);
  request.set_ignore_eos(true);
  auto reader = stub.Generate(&context, request);
  v1::GenerateResponse event;
  double first_ms = -1;
  while (reader->Read(&event))
    if (event.has_token() && first_ms < 0)
      first_ms = 1000 * std::chrono::duration<double>(Clock::now() - start).count();
  RETURN_IF_ERROR(from_grpc(reader->Finish(), "Generate"));
  if (first_ms < 0) return failed_precondition("a Generate turn streamed no token");
  return first_ms;
}

TtftFigures figures_of(int64_t history, double first_ms, const std::vector<double>& later) {
  TtftFigures f;
  f.history = history;
  f.first_ms = first_ms;
  f.later_turns = static_cast<int>(later.size());
  f.kept_ms = later.empty() ? 0 : sweep::median(later);
  return f;
}

}  // namespace

Result<std::vector<int32_t>> tokenize_over_grpc(const std::string& address, const std::string& text,
                                                bool add_bos) {
  auto stub =
      v1::Runtime::NewStub(grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  v1::TokenizeRequest request;
  request.set_text(text);
  request.set_add_bos(add_bos);
  v1::TokenizeResponse response;
  RETURN_IF_ERROR(from_grpc(stub->Tokenize(&context, request, &response), "Tokenize"));
  return std::vector<int32_t>(response.tokens().begin(), response.tokens().end());
}

Result<TtftFigures> tessera_session_ttft(const std::string& grpc_address,
                                         const std::vector<int32_t>& history,
                                         const std::vector<std::vector<int32_t>>& lines,
                                         int64_t reply_tokens) {
  auto stub =
      v1::Runtime::NewStub(grpc::CreateChannel(grpc_address, grpc::InsecureChannelCredentials()));
  std::string id;
  {
    grpc::ClientContext context;
    v1::CreateSessionRequest request;
    request.mutable_sampling()->set_temperature(0);
    v1::CreateSessionResponse response;
    RETURN_IF_ERROR(from_grpc(stub->CreateSession(&context, request, &response), "CreateSession"));
    id = response.session_id();
  }
  ASSIGN_OR_RETURN(const double first_ms, session_turn(*stub, id, history, reply_tokens));
  std::vector<double> later;
  for (const auto& line : lines) {
    ASSIGN_OR_RETURN(const double ms, session_turn(*stub, id, line, reply_tokens));
    later.push_back(ms);
  }
  grpc::ClientContext context;
  v1::CloseSessionRequest request;
  request.set_session_id(id);
  v1::CloseSessionResponse response;
  RETURN_IF_ERROR(from_grpc(stub->CloseSession(&context, request, &response), "CloseSession"));
  return figures_of(static_cast<int64_t>(history.size()), first_ms, later);
}

Result<TtftFigures> resent_conversation_ttft(const std::string& server, int http_port,
                                             const std::vector<int32_t>& history,
                                             const std::vector<std::vector<int32_t>>& lines,
                                             int64_t reply_tokens) {
  std::vector<int32_t> conversation = history;
  std::vector<double> turns;
  for (std::size_t turn = 0; turn <= lines.size(); ++turn) {
    if (turn > 0)
      conversation.insert(conversation.end(), lines[turn - 1].begin(), lines[turn - 1].end());
    const auto origin = Clock::now();
    const StreamTiming timing = stream_completion(
        "127.0.0.1", http_port, completion_body(conversation, reply_tokens), origin);
    if (!timing.error.empty()) return failed_precondition(server + ": " + timing.error);
    if (timing.text_times.empty())
      return failed_precondition(server + " streamed no text for a turn");
    turns.push_back(1000 * timing.text_times.front());
  }
  return figures_of(static_cast<int64_t>(history.size()), turns.front(),
                    {turns.begin() + 1, turns.end()});
}

}  // namespace tessera::cli::serve_bench
