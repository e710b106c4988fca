#include "apps/tessera/serve_bench/server_process.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <httplib.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

extern char** environ;

namespace tessera::cli::serve_bench {

using Clock = std::chrono::steady_clock;

Result<int> free_loopback_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return internal_error(std::string("socket: ") + std::strerror(errno));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  const bool bound = ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0 &&
                     ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0;
  const int error = errno;
  ::close(fd);
  if (!bound) return internal_error(std::string("no free loopback port: ") + std::strerror(error));
  return static_cast<int>(ntohs(address.sin_port));
}

std::string tail_of(const std::string& path, std::size_t bytes) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  const std::string all = text.str();
  return all.size() <= bytes ? all : "..." + all.substr(all.size() - bytes);
}

namespace {

bool still_running(pid_t pid) {
  int status = 0;
  return ::waitpid(pid, &status, WNOHANG) == 0;
}

}  // namespace

Result<std::unique_ptr<ServerProcess>> ServerProcess::start(const std::vector<std::string>& argv,
                                                            int port, const std::string& log_path,
                                                            double ready_timeout_s) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log_path.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  const int spawned = ::posix_spawn(&pid, argv[0].c_str(), &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0)
    return invalid_argument("cannot start " + argv[0] + ": " + std::strerror(spawned));
  std::unique_ptr<ServerProcess> server(new ServerProcess(pid, port));

  httplib::Client client("127.0.0.1", port);
  client.set_connection_timeout(1, 0);
  client.set_read_timeout(5, 0);
  const auto deadline = Clock::now() + std::chrono::duration<double>(ready_timeout_s);
  while (Clock::now() < deadline) {
    if (!still_running(pid)) {
      server->pid_ = 0;
      return failed_precondition(argv[0] + " exited before it answered /health; its log (" +
                                 log_path + ") ends:\n" + tail_of(log_path));
    }
    if (auto res = client.Get("/health"); res && res->status == 200) return server;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return failed_precondition(argv[0] + " did not answer /health on port " + std::to_string(port) +
                             " within " + std::to_string(static_cast<int>(ready_timeout_s)) +
                             " s; its log (" + log_path + ") ends:\n" + tail_of(log_path));
}

void ServerProcess::stop() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGTERM);
  const auto deadline = Clock::now() + std::chrono::seconds(10);
  while (still_running(pid_) && Clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  if (still_running(pid_)) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  pid_ = 0;
}

ServerProcess::~ServerProcess() {
  stop();
}

}  // namespace tessera::cli::serve_bench
