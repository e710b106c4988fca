// What each tessera.v1.Runtime method does, free of the transport: a
// request message and the caller's key in, a status and the response out.
// grpc_service.cpp puts these behind gRPC; the fuzz target
// fuzz/fuzz_grpc_requests.cpp calls them with arbitrary messages.
#pragma once

#include <grpcpp/support/status.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/session/session_runtime.h"
#include "proto/tessera/v1/runtime.pb.h"

namespace tessera::serve {

// The caller's key from its "authorization" metadata ("Bearer KEY", the
// scheme in any case; api_keys.h), compared with every key in constant time,
// or UNAUTHENTICATED when keys are set and it carries none of them. No keys
// set: every caller passes, with the empty key.
grpc::Status authorize(const std::vector<std::string>& keys,
                       const std::optional<std::string>& authorization, std::string& key);

class RuntimeCalls {
 public:
  RuntimeCalls(Engine& engine, SessionRuntime& runtime) : engine_(engine), runtime_(runtime) {}

  grpc::Status create_session(const std::string& key, const v1::CreateSessionRequest& request,
                              v1::CreateSessionResponse& response);
  grpc::Status append_tokens(const std::string& key, const v1::AppendTokensRequest& request,
                             v1::AppendTokensResponse& response);
  // Streams the turn through `write`; a false return (the client went away)
  // or `cancelled()` ends the turn at the next step, the session stays.
  grpc::Status generate(const std::string& key, const v1::GenerateRequest& request,
                        const std::function<bool(const v1::GenerateResponse&)>& write,
                        const std::function<bool()>& cancelled);
  grpc::Status session_info(const std::string& key, const v1::GetSessionInfoRequest& request,
                            v1::SessionInfo& response);
  grpc::Status fork_session(const std::string& key, const v1::ForkSessionRequest& request,
                            v1::CreateSessionResponse& response);
  grpc::Status close_session(const std::string& key, const v1::CloseSessionRequest& request);
  grpc::Status tokenize(const v1::TokenizeRequest& request, v1::TokenizeResponse& response);
  grpc::Status detokenize(const v1::DetokenizeRequest& request, v1::DetokenizeResponse& response);

 private:
  Engine& engine_;
  SessionRuntime& runtime_;
};

}  // namespace tessera::serve
