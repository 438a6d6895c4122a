// ipcref_peer as a child process: fork + exec, a SOCK_SEQPACKET channel passed as an
// inherited descriptor, its own process group, and always reaped.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "channel.hpp"
#include "ipcref/errc.hpp"
#include "ipcref/unique_fd.hpp"

namespace ipcref_test {

struct peer_options {
  // Environment changes: "NAME=value" sets, "NAME" removes; the rest is inherited.
  std::vector<std::string> env;
  // Descriptors of this process the peer inherits under the same numbers.
  std::vector<int> inherit;
  // When > 0, the peer is created with this pid (clone3 with set_tid: needs CAP_SYS_ADMIN;
  // the constructor throws std::system_error with clone3's errno when refused).
  pid_t pid = 0;
  // When > 0, the peer runs as this user and group (and no supplementary groups): another
  // user, without ptrace access to this process. Needs CAP_SETUID and CAP_SETGID.
  uid_t uid = 0;
};

// One reply from the peer. ok() when the peer's call succeeded.
struct peer_reply {
  message msg;
  ipcref::unique_fd fd;
  bool ok() const noexcept { return msg.status == 0; }
  ipcref::errc code() const noexcept { return static_cast<ipcref::errc>(msg.status); }
  std::string text() const { return msg.text(); }
  std::span<const std::byte> bytes() const noexcept { return msg.bytes(); }
};

class peer_process {
 public:
  explicit peer_process(const peer_options& opts = {});
  peer_process(const peer_process&) = delete;
  peer_process& operator=(const peer_process&) = delete;
  // Ends the channel, then waits for the peer to exit (SIGKILL after a grace period).
  ~peer_process();

  pid_t pid() const noexcept { return pid_; }
  int channel() const noexcept { return sock_.get(); }

  // Sends a request and waits for its reply; throws std::runtime_error when the peer
  // does not answer in `timeout` or the channel breaks. An ipcref failure in the peer is
  // a reply with status > 0, not an exception.
  peer_reply call(op verb, std::uint64_t a = 0, std::uint64_t b = 0, std::uint64_t c = 0,
                  std::span<const std::byte> bytes = {}, int fd = -1,
                  std::chrono::milliseconds timeout = std::chrono::seconds(30));
  // As call, but throws std::runtime_error (naming the request) unless the reply is ok.
  peer_reply must(op verb, std::uint64_t a = 0, std::uint64_t b = 0, std::uint64_t c = 0,
                  std::span<const std::byte> bytes = {}, int fd = -1);

  // Halves of call, for requests that block in the peer.
  void send(op verb, std::uint64_t a = 0, std::uint64_t b = 0, std::uint64_t c = 0,
            std::span<const std::byte> bytes = {}, int fd = -1);
  // The next reply, or nothing when none came within `timeout`.
  std::optional<peer_reply> poll_reply(std::chrono::milliseconds timeout);

  // Sends a signal to the peer's process group.
  void kill(int sig);
  // Waits for the peer to exit; its wait status (as from waitpid). Idempotent.
  int wait();
  bool reaped() const noexcept { return reaped_; }

 private:
  pid_t pid_ = -1;
  ipcref::unique_fd sock_;
  bool reaped_ = false;
  int status_ = 0;
};

std::string describe_wait_status(int status);

// The ipcref_peer built with the same ipcref as this test executable (support/peer_path.cpp).
const char* peer_executable() noexcept;

}  // namespace ipcref_test
