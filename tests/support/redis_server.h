// A real redis-server (Debian's package) for the remote kernel-cache tests
// (docs/kernel-cache.md, A cache shared by many workers): started on a free
// loopback port the test chooses, with no persistence, and stopped when the
// object goes. A machine without redis-server fails the test that needs it,
// naming the package: `scripts/setup.sh --tests` installs it.
#pragma once

#include <sys/types.h>

#include <string>

namespace stitch::testing {

class RedisServer {
 public:
  // Starts the server and waits until it answers PING; throws
  // std::runtime_error when it cannot.
  RedisServer();
  ~RedisServer();
  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;

  int port() const { return port_; }
  std::string url() const;  // redis://127.0.0.1:PORT

  void kill();     // SIGKILL, as a crash: the port refuses connections after
  void restart();  // a new, empty server on the same port
  void pause();    // SIGSTOP: connections hang (a slow store)
  void resume();   // SIGCONT

  // Runs one command through redis-cli and returns its output (trimmed of
  // the last newline); `args` is split by the shell.
  std::string cli(const std::string& args) const;

 private:
  void start();
  int port_ = 0;
  pid_t pid_ = -1;
};

// A loopback TCP port nothing listens on now.
int free_loopback_port();

}  // namespace stitch::testing
