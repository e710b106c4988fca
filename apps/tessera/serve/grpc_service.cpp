#include "apps/tessera/serve/grpc_service.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>

#include "core/engine/engine.h"
#include "proto/tessera/v1/runtime.grpc.pb.h"

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

class GrpcServer::Service final : public tessera::v1::Runtime::Service {
 public:
  Service(Engine& engine, SessionRuntime& runtime, std::vector<std::string> keys)
      : engine_(engine), runtime_(runtime), keys_(std::move(keys)) {}

  grpc::Status CreateSession(grpc::ServerContext* context,
                             const tessera::v1::CreateSessionRequest* request,
                             tessera::v1::CreateSessionResponse* response) override {
    std::string key;
    if (grpc::Status denied = authorize(*context, key); !denied.ok()) return denied;
    SessionOptions options;
    if (request->has_sampling()) {
      SamplingParams params = engine_.sampling();
      const auto& s = request->sampling();
      if (s.has_temperature()) params.temperature = s.temperature();
      if (s.has_top_k()) params.top_k = s.top_k();
      if (s.has_top_p()) params.top_p = s.top_p();
      if (!(params.temperature >= 0 && params.temperature <= 100) || params.top_k < 0 ||
          !(params.top_p > 0 && params.top_p <= 1))
        return {grpc::StatusCode::INVALID_ARGUMENT,
                "sampling: temperature must be in [0, 100], top_k >= 0, top_p in (0, 1]"};
      options.sampling = params;
    }
    if (request->has_seed()) options.seed = request->seed();
    auto id = runtime_.create(options, key);
    if (!id.ok()) return to_grpc(id.status());
    response->set_session_id(*id);
    return grpc::Status::OK;
  }

  grpc::Status AppendTokens(grpc::ServerContext* context,
                            const tessera::v1::AppendTokensRequest* request,
                            tessera::v1::AppendTokensResponse* response) override {
    std::string key;
    if (grpc::Status denied = authorize(*context, key); !denied.ok()) return denied;
    if (Status st = runtime_.append(request->session_id(), key, ids(request->tokens())); !st.ok())
      return to_grpc(st);
    auto info = runtime_.info(request->session_id(), key);
    if (!info.ok()) return to_grpc(info.status());
    response->set_history_tokens(info->tokens);
    return grpc::Status::OK;
  }

  grpc::Status Generate(grpc::ServerContext* context, const tessera::v1::GenerateRequest* request,
                        grpc::ServerWriter<tessera::v1::GenerateResponse>* writer) override {
    std::string key;
    if (grpc::Status denied = authorize(*context, key); !denied.ok()) return denied;
    if (request->max_tokens() < 0 || request->max_tokens() > (1 << 24))
      return {grpc::StatusCode::INVALID_ARGUMENT,
              "max_tokens is " + std::to_string(request->max_tokens()) + "; give 0 to 2^24"};
    auto history = runtime_.info(request->session_id(), key);
    if (!history.ok()) return to_grpc(history.status());
    GenerateOptions options;
    options.max_tokens = request->max_tokens();
    options.stop_tokens = ids(request->stop_tokens());
    options.stop_at_eos = !request->ignore_eos();
    auto stream = runtime_.generate(request->session_id(), key, options);
    if (!stream.ok()) return to_grpc(stream.status());
    // The previous token, so each token's text is what it adds after it.
    int32_t previous = -1;
    TokenStream::Event event;
    while ((*stream)->next(event)) {
      tessera::v1::GenerateResponse out;
      if (event.end) {
        if (!event.outcome.status.ok()) return to_grpc(event.outcome.status);
        auto* end = out.mutable_end();
        end->set_stop_reason(event.outcome.stop_reason);
        end->set_generated(event.outcome.generated);
        end->set_seconds(event.seconds);
        writer->Write(out);
        break;
      }
      auto* token = out.mutable_token();
      token->set_id(event.token);
      token->set_text(engine_.tokenizer().decode_token(previous, event.token));
      token->set_seconds(event.seconds);
      previous = event.token;
      // A client gone (cancelled, disconnected): its turn ends at the next
      // step and the session stays.
      if (context->IsCancelled() || !writer->Write(out)) {
        (*stream)->abandon();
        return {grpc::StatusCode::CANCELLED, "the client cancelled the call"};
      }
    }
    return grpc::Status::OK;
  }

  grpc::Status GetSessionInfo(grpc::ServerContext* context,
                              const tessera::v1::GetSessionInfoRequest* request,
                              tessera::v1::SessionInfo* response) override {
    std::string key;
    if (grpc::Status denied = authorize(*context, key); !denied.ok()) return denied;
    auto info = runtime_.info(request->session_id(), key);
    if (!info.ok()) return to_grpc(info.status());
    response->set_session_id(info->id);
    response->set_history_tokens(info->tokens);
    response->set_cached_tokens(info->cached);
    response->set_stored_entries(info->stored_entries);
    response->set_kv_bytes(static_cast<int64_t>(info->kv_bytes));
    response->set_idle_seconds(info->idle_seconds);
    response->set_generating(info->generating);
    return grpc::Status::OK;
  }

  grpc::Status ForkSession(grpc::ServerContext* context,
                           const tessera::v1::ForkSessionRequest* request,
                           tessera::v1::CreateSessionResponse* response) override {
    std::string key;
    if (grpc::Status denied = authorize(*context, key); !denied.ok()) return denied;
    auto id = runtime_.fork(request->session_id(), key);
    if (!id.ok()) return to_grpc(id.status());
    response->set_session_id(*id);
    return grpc::Status::OK;
  }

  grpc::Status CloseSession(grpc::ServerContext* context,
                            const tessera::v1::CloseSessionRequest* request,
                            tessera::v1::CloseSessionResponse*) override {
    std::string key;
    if (grpc::Status denied = authorize(*context, key); !denied.ok()) return denied;
    return to_grpc(runtime_.close(request->session_id(), key));
  }

  grpc::Status Tokenize(grpc::ServerContext* context, const tessera::v1::TokenizeRequest* request,
                        tessera::v1::TokenizeResponse* response) override {
    std::string key;
    if (grpc::Status denied = authorize(*context, key); !denied.ok()) return denied;
    EncodeOptions options;
    options.add_special = request->add_bos();
    options.parse_special = request->parse_special();
    auto tokens = engine_.tokenizer().encode(request->text(), options);
    if (!tokens.ok()) return to_grpc(tokens.status());
    for (const int32_t t : *tokens) response->add_tokens(t);
    return grpc::Status::OK;
  }

  grpc::Status Detokenize(grpc::ServerContext* context,
                          const tessera::v1::DetokenizeRequest* request,
                          tessera::v1::DetokenizeResponse* response) override {
    std::string key;
    if (grpc::Status denied = authorize(*context, key); !denied.ok()) return denied;
    const int32_t vocab = static_cast<int32_t>(engine_.model().config.vocab_size);
    for (int i = 0; i < request->tokens_size(); ++i)
      if (request->tokens(i) < 0 || request->tokens(i) >= vocab)
        return {grpc::StatusCode::INVALID_ARGUMENT,
                "token " + std::to_string(i) + " is " + std::to_string(request->tokens(i)) +
                    ", outside this model's vocabulary [0, " + std::to_string(vocab) + ")"};
    const std::vector<int32_t> tokens = ids(request->tokens());
    response->set_text(engine_.tokenizer().decode(tokens));
    return grpc::Status::OK;
  }

 private:
  grpc::Status authorize(const grpc::ServerContext& context, std::string& key) const {
    if (keys_.empty()) return grpc::Status::OK;
    const auto& metadata = context.client_metadata();
    const auto it = metadata.find("authorization");
    if (it != metadata.end()) {
      const std::string value(it->second.data(), it->second.size());
      const std::string prefix = "Bearer ";
      if (value.compare(0, prefix.size(), prefix) == 0) {
        key = value.substr(prefix.size());
        if (std::find(keys_.begin(), keys_.end(), key) != keys_.end()) return grpc::Status::OK;
      }
    }
    return {grpc::StatusCode::UNAUTHENTICATED,
            "missing or unknown key: send metadata 'authorization: Bearer <key>'"};
  }

  Engine& engine_;
  SessionRuntime& runtime_;
  std::vector<std::string> keys_;
};

GrpcServer::GrpcServer(Engine& engine, SessionRuntime& runtime, GrpcOptions options)
    : service_(std::make_unique<Service>(engine, runtime, options.api_keys)),
      options_(std::move(options)) {}

GrpcServer::~GrpcServer() {
  stop();
}

Status GrpcServer::start() {
  grpc::ServerBuilder builder;
  builder.AddListeningPort(options_.address, grpc::InsecureServerCredentials(), &port_);
  builder.RegisterService(service_.get());
  server_ = builder.BuildAndStart();
  if (server_ == nullptr || port_ == 0)
    return unavailable("cannot listen for gRPC on " + options_.address +
                       " (in use, or not an address of this machine); choose another with "
                       "--grpc HOST:PORT");
  return ok_status();
}

void GrpcServer::stop() {
  if (server_) {
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(10));
    server_->Wait();
    server_.reset();
  }
}

}  // namespace tessera::serve
