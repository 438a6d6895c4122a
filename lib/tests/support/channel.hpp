// The test channel: fixed-size messages over a SOCK_SEQPACKET socketpair, with at most one
// descriptor per message by SCM_RIGHTS. Shared by the tests and ipcref_peer.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "ipcref/unique_fd.hpp"

namespace ipcref_test {

// op::alloc's usm kinds.
constexpr std::uint64_t usm_host = 0, usm_device = 1, usm_shared = 2;

// What the tests ask ipcref_peer to do; arguments and results are in message::a..d.
enum class op : std::uint32_t {
  hello = 1,      // -> a: pid
  platform,       // -> text: "source|name:aspect,aspect;..." (parsed twice: the second call must agree)
  alloc,          // a: usm kind (0 host, 1 device, 2 shared), b: bytes, c: pattern seed -> a: pointer
  free,           // a: pointer
  fill,           // a: pointer, b: bytes, c: seed
  verify,         // a: pointer, b: bytes, c: seed -> a: first mismatching byte, or UINT64_MAX
  mem_get,        // a: pointer, b: 1 to attach the descriptor -> a: handle id, bytes (+ descriptor)
  mem_put,        // a: handle id
  mem_open,       // bytes (+ descriptor: open_options::descriptor) -> a: pointer
  mem_close,      // a: pointer
  phys_create,    // a: bytes, b: enable_ipc -> a: object
  phys_get,       // a: object, b: 1 to attach the descriptor -> a: handle id, bytes
  phys_put,       // a: handle id
  phys_open,      // bytes -> a: object, b: size, c: ipc enabled, d: reference count
  phys_map,       // a: object, b: bytes -> a: pointer (virtual_reserve + virtual_map read-write)
  phys_unmap,     // a: pointer, b: bytes (virtual_unmap + virtual_free)
  phys_release,   // a: object (close when opened, release when created)
  event_create,   // a: enable_ipc -> a: event
  event_get,      // a: event, b: 1 to attach the descriptor -> a: handle id, bytes
  event_put,      // a: handle id
  event_open,     // bytes -> a: event
  event_signal,   // a: event, b: delay in ms (the reply comes first, the signal after the delay)
  event_wait,     // a: event, b: timeout in ms -> a: 1 when signaled, b: elapsed ns
  event_query,    // a: event -> a: 1 when signaled
  event_reset,    // a: event
  event_release,  // a: event
  counts,         // -> a: descriptors, b: mappings, c: open mappings, d: live exports
  exit,           // a: exit status; the reply comes first
  control_get,    // a: handle id -> the handle's control descriptor attached
  set_control,    // (+ descriptor) later opens pass it as open_options::control_descriptor; none: forget it
  probe_control,  // -> a: the ways of writing the held control descriptor that worked (bits), b: those tried
};

inline constexpr std::size_t kPayloadMax = 1024;

struct message {
  op verb = op::hello;
  std::int32_t status = 0;  // 0 ok; > 0 an ipcref::errc; < 0 see status_*
  std::uint64_t a = 0, b = 0, c = 0, d = 0;
  std::uint32_t length = 0;  // bytes used in payload
  std::byte payload[kPayloadMax] = {};

  void set_payload(std::span<const std::byte> bytes);
  void set_text(std::string_view text);
  std::span<const std::byte> bytes() const noexcept { return {payload, length}; }
  std::string text() const { return {reinterpret_cast<const char*>(payload), length}; }
};

inline constexpr std::int32_t status_other_exception = -1;  // a std::exception that is not ipcref's
inline constexpr std::int32_t status_bad_request = -2;      // the peer did not understand the message

struct received {
  message msg;
  ipcref::unique_fd fd;  // the descriptor that came with it, if any
};

// Sends one message, with `fd` attached by SCM_RIGHTS when >= 0. Throws std::runtime_error.
void send_message(int sock, const message& m, int fd = -1);
// Waits up to `timeout` for one message; nothing on timeout or end of stream. Throws
// std::runtime_error on a socket error or a malformed message.
std::optional<received> receive_message(int sock, std::chrono::milliseconds timeout);

}  // namespace ipcref_test
