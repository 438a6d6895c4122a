// The channel between the runner and one role process: a SOCK_SEQPACKET socketpair made
// before the fork. Each message is one packet: a type, string fields, and at most one
// descriptor carried by SCM_RIGHTS. Roles never talk to each other directly; the runner
// relays, so it sees every step and can stop any of them.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "ipcref/unique_fd.hpp"

namespace ipcheck {

using ipcref::unique_fd;

enum class MsgType : std::uint16_t {
  hello = 1,     // role -> runner: role name, pid, address of ipcheck_verb_mark (for the BPF audit;
                 // a fuzz-role sends only name and pid)
  start,         // runner -> role: JSON (peer pids, options, fault injection)
  send,          // role -> runner: to, tag, bytes [+fd]
  deliver,       // runner -> role: from, tag, bytes [+fd]
  barrier,       // role -> runner: name
  release,       // runner -> role: name, "" or why the barrier broke
  check,         // role -> runner: JSON of one judged clause statement
  observe,       // role -> runner: name, value, clause
  native_error,  // role -> runner: JSON
  skip,          // role -> runner: reason
  step,          // role -> runner: step name (fault-injection point)
  proceed,       // runner -> role: step name
  audit,         // role -> runner: JSON of the role's own audit
  info,          // role -> runner: JSON AdapterInfo
  data,          // role -> runner: key, JSON (campaign statistics, benchmark figures)
  peer_exit,     // runner -> role: role name, how it ended
  kill_peer,     // role -> runner: role name, signal number
  done,          // role -> runner: "ok" | "aborted", message
  harness_error, // role -> runner: cause (a limit of the machine, /proc unreadable): the case is `error`
};
const char* msg_type_name(MsgType t) noexcept;

struct Message {
  MsgType type = MsgType::hello;
  std::vector<std::string> fields;
  unique_fd fd;

  const std::string& field(std::size_t i) const;
};

class ChannelError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Channel {
 public:
  Channel() = default;
  explicit Channel(unique_fd fd) : fd_(std::move(fd)) {}

  // Largest packet; bigger payloads belong in files, not on the channel.
  static constexpr std::size_t kMaxPacket = 60 * 1024;

  // False when the other end is gone; throws ChannelError on anything else.
  bool send(MsgType type, const std::vector<std::string>& fields, int fd = -1);
  // Never blocks: `full` when the other end is not reading fast enough.
  enum class TrySend { sent, gone, full };
  TrySend try_send(MsgType type, const std::vector<std::string>& fields, int fd = -1);
  bool send(const Message& m) { return send(m.type, m.fields, m.fd.get()); }
  // Waits up to timeout_ms (-1: forever). Empty on timeout; throws ChannelError when the
  // other end is gone (closed) or a packet is malformed.
  std::optional<Message> receive(int timeout_ms = -1);

  int fd() const noexcept { return fd_.get(); }
  explicit operator bool() const noexcept { return static_cast<bool>(fd_); }

 private:
  TrySend send_packet(MsgType type, const std::vector<std::string>& fields, int fd, int flags);
  unique_fd fd_;
};

// Makes a connected SOCK_SEQPACKET pair, close-on-exec on both ends.
std::pair<unique_fd, unique_fd> make_channel_pair();

// Bytes <-> std::string for message fields.
std::string to_field(std::span<const std::byte> bytes);
std::vector<std::byte> from_field(std::string_view field);

}  // namespace ipcheck
