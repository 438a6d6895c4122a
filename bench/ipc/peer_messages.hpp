// What the two processes of ipcheck-bench-ipc say to each other on descriptor 3: one struct
// per message, travelling as a data message (ipcheck/messages.hpp: msg::Data) whose key names
// it and whose JSON document carries its members, encoded and decoded in one place
// (peer_messages.cpp). Decoding throws ChannelError naming the message, the member and what
// was found.
//
//   producer -> consumer  MemExport and PhysExport per size, EventExport "ping" and "pong"
//                         (each with its descriptor where the adapter passes one), Skip for
//                         each benchmark it cannot serve, Control (the shared page), Ready;
//                         Error when it cannot go on
//   consumer -> producer  Echo (start an echo loop), Quit
//   producer -> consumer  Echoed (the loop ended: "" or what went wrong)
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "ipcheck/messages.hpp"

namespace ipcheck::bench::wire {

// An exported allocation of `size` bytes: its handle bytes and descriptor.
struct MemExport {
  static constexpr const char* key = "mem";
  std::uint64_t size = 0;
  std::vector<std::byte> bytes;
  CarriedFd fd;
};

struct PhysExport {
  static constexpr const char* key = "phys";
  std::uint64_t size = 0;
  std::vector<std::byte> bytes;
  CarriedFd fd;
};

struct EventExport {
  static constexpr const char* key = "event";
  bool ping = false;  // "ping" | "pong" on the wire
  std::vector<std::byte> bytes;
  CarriedFd fd;
};

struct Skip {
  static constexpr const char* key = "skip";
  std::string benchmark;
  std::string why;
};

struct Control {
  static constexpr const char* key = "control";
  CarriedFd fd;  // the memfd of the shared control page (required)
};

struct Ready {
  static constexpr const char* key = "ready";
};

struct Error {
  static constexpr const char* key = "error";
  std::string why;
};

struct Echo {
  static constexpr const char* key = "echo";
  bool floor = false;  // the raw futex loop, not the adapter's events
};

struct Echoed {
  static constexpr const char* key = "echoed";
  std::string error;  // "" when the loop ended as asked
};

struct Quit {
  static constexpr const char* key = "quit";
};

using Any = std::variant<MemExport, PhysExport, EventExport, Skip, Control, Ready, Error, Echo, Echoed, Quit>;

// Encoding lends a struct's descriptor to the message.
Message encode(const MemExport& m);
Message encode(const PhysExport& m);
Message encode(const EventExport& m);
Message encode(const Skip& m);
Message encode(const Control& m);
Message encode(const Ready& m);
Message encode(const Error& m);
Message encode(const Echo& m);
Message encode(const Echoed& m);
Message encode(const Quit& m);

// The message in data message `m`; a descriptor moves from `m`.
Any decode(Message& m);

}  // namespace ipcheck::bench::wire
