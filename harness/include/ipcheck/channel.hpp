// The channel between a parent (the runner, the fuzz campaign) and one role process: a
// SOCK_SEQPACKET socketpair made before the fork. Each message is one packet: a type, string
// fields, and at most one descriptor carried by SCM_RIGHTS. Roles never talk to each other
// directly; the parent relays, so it sees every step and can stop any of them.
//
// What each type carries, field by field, is ipcheck/messages.hpp: one struct per type,
// encoded and decoded in one place. Code outside the codec sends and reads those structs
// (`channel.send(msg::Barrier{name})`, `msg::decode<msg::Release>(m)`), never fields by position.
#pragma once

#include <concepts>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "ipcref/unique_fd.hpp"

namespace ipcheck {

using ipcref::unique_fd;

// The message types. The fields of each are in ipcheck/messages.hpp; `hello` is type 1 and
// its first field is the protocol version in every version, so a parent can tell a role of
// another ipcheck build from a broken one.
enum class MsgType : std::uint16_t {
  hello = 1,     // role -> parent: protocol version, role name, pid, address of ipcheck_verb_mark
  start,         // parent -> role: JSON (the runner's: peer pids, options, fault injection)
  send,          // role -> parent: to, tag, bytes [+fd]
  deliver,       // parent -> role: from, tag, bytes [+fd]
  barrier,       // role -> runner: name
  release,       // parent -> role: name, "" or why the barrier broke ("stop": the campaign's end)
  check,         // role -> runner: JSON of one judged clause statement
  observe,       // role -> runner: name, value, clause
  native_error,  // role -> runner: JSON (verb, errc, native code and name, message)
  skip,          // role -> runner: reason
  step,          // role -> runner: step name [, "into"] (fault-injection point)
  proceed,       // runner -> role: step name
  audit,         // role -> runner: JSON of the role's own audit
  info,          // role -> runner: JSON AdapterInfo (or why the adapter is not available)
  data,          // either way: key, document [+fd] (a case's figures; the fuzz campaign's and
                 // the bench's own protocols, a key naming each of their messages)
  peer_exit,     // runner -> role: role name, how it ended
  kill_peer,     // role -> runner: role name, signal number
  done,          // role -> parent: "ok" | "aborted", message
  harness_error, // role -> runner: cause (a limit of the machine, /proc unreadable): the case is `error`
  peer_start,    // runner -> role: role name, pid (an on-demand role started after the others)
  initialised,   // role -> runner: the adapter is initialised (seconds it took): its start slot is free
  want_start,    // role -> runner: prepared (Adapter::prepare); it waits for a start slot
  start_granted, // runner -> role: the slot is its own: it may make its contexts (Adapter::init)
};
const char* msg_type_name(MsgType t) noexcept;

// The descriptor a message carries: one its sender lends (`lend`: it stays the sender's and
// is not closed here), or one a received message owns (SCM_RIGHTS made it; `take` hands it on).
class CarriedFd {
 public:
  CarriedFd() = default;
  explicit CarriedFd(unique_fd owned) noexcept : owned_(std::move(owned)) {}
  static CarriedFd lend(int fd) noexcept {
    CarriedFd c;
    c.lent_ = fd;
    return c;
  }

  int get() const noexcept { return owned_ ? owned_.get() : lent_; }
  bool owned() const noexcept { return static_cast<bool>(owned_); }
  explicit operator bool() const noexcept { return get() >= 0; }
  // The owned descriptor; none for a lent one (its sender keeps it).
  unique_fd take() noexcept {
    lent_ = -1;
    return std::move(owned_);
  }

 private:
  unique_fd owned_;
  int lent_ = -1;
};

// One packet as it travels. Read it through the codec (ipcheck/messages.hpp).
struct Message {
  MsgType type = MsgType::hello;
  std::vector<std::string> fields;
  CarriedFd fd;
};

class ChannelError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A struct of ipcheck/messages.hpp (or of a protocol built on data messages) that encodes
// itself: `encode(m)` found beside it.
template <class T>
concept EncodableMessage = requires(const T& m) {
  { encode(m) } -> std::same_as<Message>;
};

class Channel {
 public:
  Channel() = default;
  explicit Channel(unique_fd fd) : fd_(std::move(fd)) {}

  // Largest packet; bigger payloads belong in files, not on the channel.
  static constexpr std::size_t kMaxPacket = 60 * 1024;

  // False when the other end is gone; throws ChannelError on anything else.
  bool send(const Message& m);
  template <EncodableMessage T>
  bool send(const T& m) {
    return send(encode(m));
  }
  // Never blocks: `full` when the other end is not reading fast enough.
  enum class TrySend { sent, gone, full };
  TrySend try_send(const Message& m);
  // Waits up to timeout_ms (-1: forever). Empty on timeout; throws ChannelError when the
  // other end is gone (closed) or a packet is malformed.
  std::optional<Message> receive(int timeout_ms = -1);

  int fd() const noexcept { return fd_.get(); }
  explicit operator bool() const noexcept { return static_cast<bool>(fd_); }

 private:
  TrySend send_packet(const Message& m, int flags);
  unique_fd fd_;
};

// Makes a connected SOCK_SEQPACKET pair, close-on-exec on both ends.
std::pair<unique_fd, unique_fd> make_channel_pair();

}  // namespace ipcheck
