#include "channel.hpp"

#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace ipcref_test {

void message::set_payload(std::span<const std::byte> bytes) {
  if (bytes.size() > kPayloadMax) throw std::length_error("message payload over " + std::to_string(kPayloadMax));
  if (!bytes.empty()) std::memcpy(payload, bytes.data(), bytes.size());
  length = static_cast<std::uint32_t>(bytes.size());
}

void message::set_text(std::string_view text) {
  const std::size_t n = std::min(text.size(), kPayloadMax);
  std::memcpy(payload, text.data(), n);
  length = static_cast<std::uint32_t>(n);
}

void send_message(int sock, const message& m, int fd) {
  iovec iov{const_cast<message*>(&m), sizeof m};
  msghdr hdr{};
  hdr.msg_iov = &iov;
  hdr.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  if (fd >= 0) {
    hdr.msg_control = control;
    hdr.msg_controllen = sizeof control;
    cmsghdr* c = CMSG_FIRSTHDR(&hdr);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(c), &fd, sizeof fd);
  }
  for (;;) {
    const ssize_t n = ::sendmsg(sock, &hdr, MSG_NOSIGNAL);
    if (n == static_cast<ssize_t>(sizeof m)) return;
    if (n < 0 && errno == EINTR) continue;
    throw std::runtime_error(std::string("channel: sendmsg failed: ") + (n < 0 ? std::strerror(errno) : "short send"));
  }
}

std::optional<received> receive_message(int sock, std::chrono::milliseconds timeout) {
  pollfd p{sock, POLLIN, 0};
  int ready = 0;
  do ready = ::poll(&p, 1, static_cast<int>(timeout.count()));
  while (ready < 0 && errno == EINTR);
  if (ready < 0) throw std::runtime_error(std::string("channel: poll failed: ") + std::strerror(errno));
  if (ready == 0) return std::nullopt;

  received r;
  iovec iov{&r.msg, sizeof r.msg};
  msghdr hdr{};
  hdr.msg_iov = &iov;
  hdr.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  hdr.msg_control = control;
  hdr.msg_controllen = sizeof control;
  ssize_t n = 0;
  do n = ::recvmsg(sock, &hdr, MSG_CMSG_CLOEXEC);
  while (n < 0 && errno == EINTR);
  if (n < 0) throw std::runtime_error(std::string("channel: recvmsg failed: ") + std::strerror(errno));
  // Take any descriptor first, so that it is owned (and closed) whatever happens next.
  for (cmsghdr* c = CMSG_FIRSTHDR(&hdr); c; c = CMSG_NXTHDR(&hdr, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    const std::size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (std::size_t i = 0; i < count; ++i) {
      int fd = -1;
      std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
      ipcref::unique_fd owned(fd);
      if (!r.fd) r.fd = std::move(owned);  // at most one is expected; the rest close here
    }
  }
  if (n == 0) return std::nullopt;  // the other end closed
  if (n != static_cast<ssize_t>(sizeof r.msg) || (hdr.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) ||
      r.msg.length > kPayloadMax)
    throw std::runtime_error("channel: malformed message of " + std::to_string(n) + " bytes");
  return r;
}

}  // namespace ipcref_test
