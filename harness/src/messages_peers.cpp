// The codec of peers and start slots (ipcheck/messages.hpp): a peer's start and exit, a
// role's want_start, start_granted and initialised, and kill_peer.
#include "ipcheck/messages.hpp"

#include <cstdio>
#include <cstdlib>
#include <string>

#include "messages_codec.hpp"

namespace ipcheck::msg {

using namespace codec;

// ---------------------------------------------------------------- peers

Message encode(const PeerExit& m) { return make(MsgType::peer_exit, {m.role, m.how}); }

template <>
PeerExit decode<PeerExit>(Message& m) {
  const Fields f(m, MsgType::peer_exit, {"role", "how"});
  return {f.text(0), f.text(1)};
}

Message encode(const PeerStart& m) { return make(MsgType::peer_start, {m.role, std::to_string(m.pid)}); }

template <>
PeerStart decode<PeerStart>(Message& m) {
  const Fields f(m, MsgType::peer_start, {"role", "pid"});
  return {f.text(0), static_cast<int>(f.number(1, 1, kMaxPid))};
}

Message encode(const Initialised& m) {
  char text[32];
  std::snprintf(text, sizeof text, "%.6f", m.seconds);
  return make(MsgType::initialised, {text});
}

Message encode(const WantStart&) { return make(MsgType::want_start, {}); }
Message encode(const StartGranted&) { return make(MsgType::start_granted, {}); }

template <>
WantStart decode<WantStart>(Message& m) {
  (void)Fields(m, MsgType::want_start, {});
  return {};
}

template <>
StartGranted decode<StartGranted>(Message& m) {
  (void)Fields(m, MsgType::start_granted, {});
  return {};
}

template <>
Initialised decode<Initialised>(Message& m) {
  const Fields f(m, MsgType::initialised, {"seconds"});
  const std::string& t = f.text(0);
  char* end = nullptr;
  const double v = std::strtod(t.c_str(), &end);
  if (t.empty() || end != t.c_str() + t.size() || !(v >= 0) || v > 1e9) f.fail(0, "not a number of seconds");
  return {v};
}

Message encode(const KillPeer& m) { return make(MsgType::kill_peer, {m.role, std::to_string(m.signal)}); }

template <>
KillPeer decode<KillPeer>(Message& m) {
  const Fields f(m, MsgType::kill_peer, {"role", "signal"});
  return {f.text(0), static_cast<int>(f.number(1, 1, 64))};
}

}  // namespace ipcheck::msg
