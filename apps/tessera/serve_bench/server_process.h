// A server under load for `tessera bench --serve`: tessera serve or
// llama-server started as a process of its own on a loopback port, ready
// once GET /health answers 200, stopped with SIGTERM (SIGKILL after 10 s).
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "core/status/status.h"

namespace tessera::cli::serve_bench {

// A loopback TCP port free at the time of the call.
Result<int> free_loopback_port();

class ServerProcess {
 public:
  // Runs `argv` (argv[0] a path) with stdout and stderr into `log_path` and
  // waits up to `ready_timeout_s` for GET http://127.0.0.1:`port`/health to
  // answer 200. An error quotes the end of the log.
  static Result<std::unique_ptr<ServerProcess>> start(const std::vector<std::string>& argv,
                                                      int port, const std::string& log_path,
                                                      double ready_timeout_s);
  ~ServerProcess();
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  // SIGTERM, then SIGKILL if it is still running 10 s later. Idempotent.
  void stop();
  int port() const { return port_; }
  pid_t pid() const { return pid_; }

 private:
  ServerProcess(pid_t pid, int port) : pid_(pid), port_(port) {}
  pid_t pid_;
  int port_;
};

// The last `bytes` of a file, for error messages.
std::string tail_of(const std::string& path, std::size_t bytes = 1200);

}  // namespace tessera::cli::serve_bench
