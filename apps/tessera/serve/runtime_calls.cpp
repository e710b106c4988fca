#include "apps/tessera/serve/runtime_calls.h"

#include <algorithm>
#include <string_view>

#include "apps/tessera/serve/api_keys.h"
#include "core/engine/engine.h"

namespace tessera::serve {
namespace {

// tessera's codes are gRPC's numbers (core/status/status.h).
grpc::Status to_grpc(const Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return {static_cast<grpc::StatusCode>(static_cast<int>(status.code())), status.message()};
}

std::vector<int32_t> ids(const google::protobuf::RepeatedField<int32_t>& field) {
  return {field.begin(), field.end()};
}

}  // namespace

grpc::Status authorize(const std::vector<std::string>& keys,
                       const std::optional<std::string>& authorization, std::string& key) {
  key.clear();
  if (keys.empty()) return grpc::Status::OK;
  const std::optional<std::string_view> presented =
      authorization ? bearer_token(*authorization) : std::nullopt;
  if (presented && key_allowed(*presented, keys)) {
    key = *presented;
    return grpc::Status::OK;
  }
  return {grpc::StatusCode::UNAUTHENTICATED,
          "missing or unknown key: send metadata 'authorization: Bearer <key>'"};
}

grpc::Status RuntimeCalls::create_session(const std::string& key,
                                          const v1::CreateSessionRequest& request,
                                          v1::CreateSessionResponse& response) {
  SessionOptions options;
  if (request.has_sampling()) {
    SamplingParams params = engine_.sampling();
    const auto& s = request.sampling();
    if (s.has_temperature()) params.temperature = s.temperature();
    if (s.has_top_k()) params.top_k = s.top_k();
    if (s.has_top_p()) params.top_p = s.top_p();
    if (!(params.temperature >= 0 && params.temperature <= 100) || params.top_k < 0 ||
        !(params.top_p > 0 && params.top_p <= 1))
      return {grpc::StatusCode::INVALID_ARGUMENT,
              "sampling: temperature must be in [0, 100], top_k >= 0, top_p in (0, 1]"};
    options.sampling = params;
  }
  if (request.has_seed()) options.seed = request.seed();
  // Names longer than any proposer's are refused here, so the engine's
  // message (which repeats the name) never echoes a huge one.
  if (request.has_proposer() && request.proposer().size() > 64)
    return {grpc::StatusCode::INVALID_ARGUMENT,
            "proposer '" + echoed_id(request.proposer()) + "' is not one this server runs"};
  if (request.has_proposer()) options.proposer = request.proposer();
  if (request.has_verifier() && request.verifier() != engine_.description().verifier)
    return {grpc::StatusCode::INVALID_ARGUMENT,
            "verifier '" + echoed_id(request.verifier()) +
                "': every session is verified by decode.verifier = \"" +
                engine_.description().verifier +
                "\" (one forward verifies them all); leave it unset"};
  // Chosen here, so the response can say it.
  options.seed = runtime_.chosen_seed(options);
  auto id = runtime_.create(options, key);
  if (!id.ok()) return to_grpc(id.status());
  response.set_session_id(*id);
  response.set_seed(*options.seed);
  return grpc::Status::OK;
}

grpc::Status RuntimeCalls::append_tokens(const std::string& key,
                                         const v1::AppendTokensRequest& request,
                                         v1::AppendTokensResponse& response) {
  if (Status st = runtime_.append(request.session_id(), key, ids(request.tokens())); !st.ok())
    return to_grpc(st);
  auto info = runtime_.info(request.session_id(), key);
  if (!info.ok()) return to_grpc(info.status());
  response.set_history_tokens(info->tokens);
  return grpc::Status::OK;
}

grpc::Status RuntimeCalls::generate(const std::string& key, const v1::GenerateRequest& request,
                                    const std::function<bool(const v1::GenerateResponse&)>& write,
                                    const std::function<bool()>& cancelled) {
  if (request.max_tokens() < 0 || request.max_tokens() > (1 << 24))
    return {grpc::StatusCode::INVALID_ARGUMENT,
            "max_tokens is " + std::to_string(request.max_tokens()) + "; give 0 to 2^24"};
  // The history's last token, so the first token's text is what it adds
  // after it (a SentencePiece leading space is kept mid-conversation).
  auto history = runtime_.info(request.session_id(), key);
  if (!history.ok()) return to_grpc(history.status());
  GenerateOptions options;
  options.max_tokens = request.max_tokens();
  options.stop_tokens = ids(request.stop_tokens());
  options.stop_at_eos = !request.ignore_eos();
  auto stream = runtime_.generate(request.session_id(), key, options);
  if (!stream.ok()) return to_grpc(stream.status());
  int32_t previous = history->last_token;
  TokenStream::Event event;
  while ((*stream)->next(event)) {
    v1::GenerateResponse out;
    if (event.end) {
      if (!event.outcome.status.ok()) return to_grpc(event.outcome.status);
      auto* end = out.mutable_end();
      end->set_stop_reason(event.outcome.stop_reason);
      end->set_generated(event.outcome.generated);
      end->set_steps(event.outcome.steps);
      end->set_drafted(event.outcome.drafted);
      end->set_seconds(event.seconds);
      write(out);
      break;
    }
    auto* token = out.mutable_token();
    token->set_id(event.token);
    token->set_text(engine_.tokenizer().decode_token(previous, event.token));
    token->set_seconds(event.seconds);
    previous = event.token;
    // A client gone (cancelled, disconnected): its turn ends at the next
    // step and the session stays.
    if (cancelled() || !write(out)) {
      (*stream)->abandon();
      return {grpc::StatusCode::CANCELLED, "the client cancelled the call"};
    }
  }
  return grpc::Status::OK;
}

grpc::Status RuntimeCalls::session_info(const std::string& key,
                                        const v1::GetSessionInfoRequest& request,
                                        v1::SessionInfo& response) {
  auto info = runtime_.info(request.session_id(), key, request.include_history());
  if (!info.ok()) return to_grpc(info.status());
  response.set_session_id(info->id);
  response.set_history_tokens(info->tokens);
  response.set_cached_tokens(info->cached);
  response.set_stored_entries(info->stored_entries);
  response.set_kv_bytes(static_cast<int64_t>(info->kv_bytes));
  response.set_kv_shared_bytes(static_cast<int64_t>(info->kv_shared_bytes));
  response.set_proposer(info->proposer);
  response.set_idle_seconds(info->idle_seconds);
  response.set_generating(info->generating);
  response.set_seed(info->seed);
  for (const int32_t token : info->history) response.add_history(token);
  return grpc::Status::OK;
}

grpc::Status RuntimeCalls::fork_session(const std::string& key,
                                        const v1::ForkSessionRequest& request,
                                        v1::CreateSessionResponse& response) {
  auto id = runtime_.fork(request.session_id(), key);
  if (!id.ok()) return to_grpc(id.status());
  response.set_session_id(*id);
  return grpc::Status::OK;
}

grpc::Status RuntimeCalls::close_session(const std::string& key,
                                         const v1::CloseSessionRequest& request) {
  return to_grpc(runtime_.close(request.session_id(), key));
}

grpc::Status RuntimeCalls::tokenize(const v1::TokenizeRequest& request,
                                    v1::TokenizeResponse& response) {
  EncodeOptions options;
  options.add_special = request.add_bos();
  options.parse_special = request.parse_special();
  auto tokens = engine_.tokenizer().encode(request.text(), options);
  if (!tokens.ok()) return to_grpc(tokens.status());
  for (const int32_t t : *tokens) response.add_tokens(t);
  return grpc::Status::OK;
}

grpc::Status RuntimeCalls::detokenize(const v1::DetokenizeRequest& request,
                                      v1::DetokenizeResponse& response) {
  const auto vocab = static_cast<int32_t>(engine_.model().config.vocab_size);
  for (int i = 0; i < request.tokens_size(); ++i)
    if (request.tokens(i) < 0 || request.tokens(i) >= vocab)
      return {grpc::StatusCode::INVALID_ARGUMENT,
              "token " + std::to_string(i) + " is " + std::to_string(request.tokens(i)) +
                  ", outside this model's vocabulary [0, " + std::to_string(vocab) + ")"};
  response.set_text(engine_.tokenizer().decode(ids(request.tokens())));
  return grpc::Status::OK;
}

}  // namespace tessera::serve
