// The gRPC face of the session runtime: tessera.v1.Runtime
// (proto/tessera/v1/runtime.proto). Sessions live across calls; each call
// is a command to the runtime's loop thread, and Generate streams the turn's
// tokens as they come. Keys (server.api_keys) ride in the "authorization"
// metadata as "Bearer KEY"; a session is seen only by its key.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/session/session_runtime.h"

namespace grpc {
class Server;
}

namespace tessera::serve {

struct GrpcOptions {
  std::string address = "127.0.0.1:50051";  // port 0: any free port
  std::vector<std::string> api_keys;
};

class GrpcServer {
 public:
  GrpcServer(Engine& engine, SessionRuntime& runtime, GrpcOptions options);
  ~GrpcServer();
  GrpcServer(const GrpcServer&) = delete;
  GrpcServer& operator=(const GrpcServer&) = delete;

  // Builds and starts the server; an error says which address failed.
  Status start();
  int port() const { return port_; }
  // Ends every call (streams see their turn end first when the runtime was
  // shut down before) and stops.
  void stop();

 private:
  class Service;
  std::unique_ptr<Service> service_;
  std::unique_ptr<grpc::Server> server_;
  GrpcOptions options_;
  int port_ = 0;
};

}  // namespace tessera::serve
