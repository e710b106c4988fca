#include "apps/tessera/serve/grpc_service.h"

#include <grpcpp/grpcpp.h>

#include <optional>

#include "apps/tessera/serve/runtime_calls.h"
#include "proto/tessera/v1/runtime.grpc.pb.h"

namespace tessera::serve {

// Each method: the caller's key checked, then the transport-free call.
class GrpcServer::Service final : public tessera::v1::Runtime::Service {
 public:
  Service(Engine& engine, SessionRuntime& runtime, std::vector<std::string> keys)
      : calls_(engine, runtime), keys_(std::move(keys)) {}

  grpc::Status CreateSession(grpc::ServerContext* context, const v1::CreateSessionRequest* request,
                             v1::CreateSessionResponse* response) override {
    return keyed(*context, [&](const std::string& key) {
      return calls_.create_session(key, *request, *response);
    });
  }
  grpc::Status AppendTokens(grpc::ServerContext* context, const v1::AppendTokensRequest* request,
                            v1::AppendTokensResponse* response) override {
    return keyed(*context, [&](const std::string& key) {
      return calls_.append_tokens(key, *request, *response);
    });
  }
  grpc::Status Generate(grpc::ServerContext* context, const v1::GenerateRequest* request,
                        grpc::ServerWriter<v1::GenerateResponse>* writer) override {
    return keyed(*context, [&](const std::string& key) {
      return calls_.generate(
          key, *request, [writer](const v1::GenerateResponse& out) { return writer->Write(out); },
          [context] { return context->IsCancelled(); });
    });
  }
  grpc::Status GetSessionInfo(grpc::ServerContext* context,
                              const v1::GetSessionInfoRequest* request,
                              v1::SessionInfo* response) override {
    return keyed(*context, [&](const std::string& key) {
      return calls_.session_info(key, *request, *response);
    });
  }
  grpc::Status ForkSession(grpc::ServerContext* context, const v1::ForkSessionRequest* request,
                           v1::CreateSessionResponse* response) override {
    return keyed(*context, [&](const std::string& key) {
      return calls_.fork_session(key, *request, *response);
    });
  }
  grpc::Status CloseSession(grpc::ServerContext* context, const v1::CloseSessionRequest* request,
                            v1::CloseSessionResponse*) override {
    return keyed(*context,
                 [&](const std::string& key) { return calls_.close_session(key, *request); });
  }
  grpc::Status Tokenize(grpc::ServerContext* context, const v1::TokenizeRequest* request,
                        v1::TokenizeResponse* response) override {
    return keyed(*context,
                 [&](const std::string&) { return calls_.tokenize(*request, *response); });
  }
  grpc::Status Detokenize(grpc::ServerContext* context, const v1::DetokenizeRequest* request,
                          v1::DetokenizeResponse* response) override {
    return keyed(*context,
                 [&](const std::string&) { return calls_.detokenize(*request, *response); });
  }

 private:
  template <typename Call>
  grpc::Status keyed(const grpc::ServerContext& context, Call&& call) const {
    std::optional<std::string> authorization;
    const auto& metadata = context.client_metadata();
    if (const auto it = metadata.find("authorization"); it != metadata.end())
      authorization.emplace(it->second.data(), it->second.size());
    std::string key;
    if (grpc::Status denied = authorize(keys_, authorization, key); !denied.ok()) return denied;
    return call(key);
  }

  RuntimeCalls calls_;
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
  // No SO_REUSEPORT (gRPC's default): a second server on a port already
  // served is refused instead of sharing its connections.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
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
