#include "redis_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <thread>

namespace stitch::testing {

int free_loopback_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw std::runtime_error("free_loopback_port: no socket");
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;  // the kernel chooses
  socklen_t length = sizeof address;
  const bool ok = bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0 &&
                  getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0;
  close(fd);
  if (!ok) throw std::runtime_error("free_loopback_port: bind failed");
  return ntohs(address.sin_port);
}

RedisServer::RedisServer() : port_(free_loopback_port()) { start(); }

RedisServer::~RedisServer() {
  if (pid_ > 0) {
    ::kill(pid_, SIGCONT);
    ::kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
}

std::string RedisServer::url() const { return "redis://127.0.0.1:" + std::to_string(port_); }

void RedisServer::start() {
  const std::string port = std::to_string(port_);
  pid_ = fork();
  if (pid_ < 0) throw std::runtime_error("RedisServer: fork failed");
  if (pid_ == 0) {
    // No persistence, loopback only, its own port, quiet.
    execlp("redis-server", "redis-server", "--port", port.c_str(), "--bind", "127.0.0.1", "--save", "",
           "--appendonly", "no", "--loglevel", "warning", "--logfile", "/dev/null", static_cast<char*>(nullptr));
    std::perror("redis-server (Debian package redis-server; scripts/setup.sh --tests installs it)");
    _exit(127);
  }
  for (int attempt = 0; attempt < 200; ++attempt) {
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      throw std::runtime_error("redis-server did not start (is the Debian package redis-server installed?)");
    }
    if (cli("PING") == "PONG") return;
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  throw std::runtime_error("redis-server on port " + port + " did not answer PING within 5 s");
}

void RedisServer::kill() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGCONT);
  ::kill(pid_, SIGKILL);
  waitpid(pid_, nullptr, 0);
  pid_ = -1;
}

void RedisServer::restart() {
  kill();
  start();
}

void RedisServer::pause() { ::kill(pid_, SIGSTOP); }
void RedisServer::resume() { ::kill(pid_, SIGCONT); }

std::string RedisServer::cli(const std::string& args) const {
  const std::string command = "redis-cli -p " + std::to_string(port_) + " " + args + " 2>/dev/null";
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command.c_str(), "r"), pclose);
  if (!pipe) return "";
  std::string out;
  std::array<char, 4096> buffer;
  while (size_t n = fread(buffer.data(), 1, buffer.size(), pipe.get())) out.append(buffer.data(), n);
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

}  // namespace stitch::testing
