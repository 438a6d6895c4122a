#include "ipcheck/channel.hpp"
#include "ipcheck/spawn.hpp"

#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <string_view>

namespace ipcheck {

const char* msg_type_name(MsgType t) noexcept {
  switch (t) {
    case MsgType::hello: return "hello";
    case MsgType::start: return "start";
    case MsgType::send: return "send";
    case MsgType::deliver: return "deliver";
    case MsgType::barrier: return "barrier";
    case MsgType::release: return "release";
    case MsgType::check: return "check";
    case MsgType::observe: return "observe";
    case MsgType::native_error: return "native_error";
    case MsgType::skip: return "skip";
    case MsgType::step: return "step";
    case MsgType::proceed: return "proceed";
    case MsgType::audit: return "audit";
    case MsgType::info: return "info";
    case MsgType::data: return "data";
    case MsgType::peer_exit: return "peer_exit";
    case MsgType::kill_peer: return "kill_peer";
    case MsgType::done: return "done";
    case MsgType::harness_error: return "harness_error";
    case MsgType::peer_start: return "peer_start";
    case MsgType::initialised: return "initialised";
    case MsgType::want_start: return "want_start";
    case MsgType::start_granted: return "start_granted";
  }
  return "unknown";
}

bool Channel::send(const Message& m) { return send_packet(m, 0) == TrySend::sent; }

Channel::TrySend Channel::try_send(const Message& m) { return send_packet(m, MSG_DONTWAIT); }

// Packet: u16 type, u16 field count, then for each field u32 length and the bytes.
Channel::TrySend Channel::send_packet(const Message& m, int flags) {
  std::string packet;
  auto put16 = [&](std::uint16_t v) { packet.append(reinterpret_cast<const char*>(&v), 2); };
  auto put32 = [&](std::uint32_t v) { packet.append(reinterpret_cast<const char*>(&v), 4); };
  put16(static_cast<std::uint16_t>(m.type));
  put16(static_cast<std::uint16_t>(m.fields.size()));
  for (const auto& f : m.fields) {
    put32(static_cast<std::uint32_t>(f.size()));
    packet += f;
  }
  if (packet.size() > kMaxPacket)
    throw ChannelError(std::string("channel: ") + msg_type_name(m.type) + " message of " +
                       std::to_string(packet.size()) + " bytes exceeds the " + std::to_string(kMaxPacket) +
                       "-byte packet limit");
  iovec iov{packet.data(), packet.size()};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  if (const int fd = m.fd.get(); fd >= 0) {
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(c), &fd, sizeof(int));
  }
  for (;;) {
    if (::sendmsg(fd_.get(), &msg, MSG_NOSIGNAL | flags) >= 0) return TrySend::sent;
    if (errno == EINTR) continue;
    if (errno == EPIPE || errno == ECONNRESET) return TrySend::gone;
    if (errno == EAGAIN) return TrySend::full;
    throw ChannelError(std::string("channel: sendmsg failed: ") + std::strerror(errno));
  }
}

std::optional<Message> Channel::receive(int timeout_ms) {
  if (timeout_ms >= 0) {
    pollfd p{fd_.get(), POLLIN, 0};
    int n;
    do n = ::poll(&p, 1, timeout_ms);
    while (n < 0 && errno == EINTR);
    if (n == 0) return std::nullopt;
  }
  // One byte more than the largest packet, so that a bigger one shows as MSG_TRUNC. The
  // buffer is kept per thread and not cleared: only the n bytes received are read.
  constexpr std::size_t kBufferSize = kMaxPacket + 1;
  thread_local const std::unique_ptr<char[]> buffer(new char[kBufferSize]);
  iovec iov{buffer.get(), kBufferSize};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * 4)] = {};
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  // A peer that closed with packets unread in its own queue makes the kernel report
  // ECONNRESET once, before the packets it sent us; the error clears as it is read.
  ssize_t n;
  int resets = 0;
  do n = ::recvmsg(fd_.get(), &msg, MSG_CMSG_CLOEXEC);
  while (n < 0 && (errno == EINTR || (errno == ECONNRESET && resets++ == 0)));
  if (n < 0) throw ChannelError(std::string("channel: recvmsg failed: ") + std::strerror(errno));
  // Take ownership of every descriptor first, so none leaks on a malformed packet.
  std::vector<unique_fd> fds;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    const std::size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (std::size_t i = 0; i < count; ++i) {
      int fd;
      std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
      fds.emplace_back(fd);
    }
  }
  if (n == 0) throw ChannelError("channel: the other end closed the channel");
  if (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) throw ChannelError("channel: a packet was truncated");
  const std::string_view packet(buffer.get(), static_cast<std::size_t>(n));
  if (fds.size() > 1) throw ChannelError("channel: a packet carried more than one descriptor");
  Message m;
  std::size_t at = 0;
  auto get = [&](void* out, std::size_t len) {
    if (at + len > packet.size()) throw ChannelError("channel: a packet is shorter than its fields say");
    std::memcpy(out, packet.data() + at, len);
    at += len;
  };
  std::uint16_t type = 0, count = 0;
  get(&type, 2);
  get(&count, 2);
  m.type = static_cast<MsgType>(type);
  for (std::uint16_t i = 0; i < count; ++i) {
    std::uint32_t len = 0;
    get(&len, 4);
    if (at + len > packet.size()) throw ChannelError("channel: a packet is shorter than its fields say");
    m.fields.emplace_back(packet.data() + at, len);
    at += len;
  }
  if (!fds.empty()) m.fd = CarriedFd(std::move(fds.front()));
  return m;
}

std::pair<unique_fd, unique_fd> make_channel_pair() {
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0)
    throw ChannelError(limit_error("socketpair", errno));
  return {unique_fd(sv[0]), unique_fd(sv[1])};
}

}  // namespace ipcheck
