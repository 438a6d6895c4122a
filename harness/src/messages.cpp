// The channel's codec (ipcheck/messages.hpp): every message's fields, in order, written and
// read in messages*.cpp and nowhere else. Here: the hello (the protocol version first) and the
// start, and any message by its type; the flow of a case is messages_flow.cpp's, what a role
// reports messages_report.cpp's, peers and start slots messages_peers.cpp's, DocReader
// messages_doc.cpp's; their shared field reader is messages_codec.hpp.
#include "ipcheck/messages.hpp"

#include <charconv>
#include <string>

#include "ipcheck/reports/files.hpp"
#include "messages_codec.hpp"

namespace ipcheck::msg {

using namespace codec;

// ---------------------------------------------------------------- hello, start

Message encode(const Hello& m) {
  return make(MsgType::hello, {std::to_string(m.version), m.role, std::to_string(m.pid), m.verb_mark});
}

// The version first, before the rest of the layout: a hello of another version may have
// other fields, and what matters then is which build the role is.
template <>
Hello decode<Hello>(Message& m) {
  static const std::string fix =
      "; a role and its parent must come from one ipcheck build (rebuild ipcheck, and run the roles from the "
      "same ipcheck binary as their parent)";
  if (m.type == MsgType::hello && !m.fields.empty()) {
    const std::string& v = m.fields[0];
    int version = 0;
    const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), version);
    if (v.empty() || ec != std::errc() || end != v.data() + v.size())
      throw ChannelError("channel: the role's hello names no protocol version (its first field is " + shown(v) +
                         "): an ipcheck from before versioned hellos; this ipcheck speaks protocol version " +
                         std::to_string(kProtocolVersion) + fix);
    if (version != kProtocolVersion)
      throw ChannelError("channel: the role speaks protocol version " + std::to_string(version) +
                         " and this ipcheck speaks protocol version " + std::to_string(kProtocolVersion) + fix);
  }
  const Fields f(m, MsgType::hello, {"version", "role", "pid", "verb_mark"});
  return {kProtocolVersion, f.text(1), static_cast<int>(f.number(2, 1, kMaxPid)), f.text(3)};
}

Message encode(const Start& m) { return make(MsgType::start, {reports::dump_json(m.doc)}); }

template <>
Start decode<Start>(Message& m) {
  const Fields f(m, MsgType::start, {"document"});
  return {f.document(0)};
}

// ---------------------------------------------------------------- any

Any decode_any(Message& m) {
  switch (m.type) {
    case MsgType::hello: return decode<Hello>(m);
    case MsgType::start: return decode<Start>(m);
    case MsgType::send: return decode<Send>(m);
    case MsgType::deliver: return decode<Deliver>(m);
    case MsgType::barrier: return decode<Barrier>(m);
    case MsgType::release: return decode<Release>(m);
    case MsgType::check: return decode<Check>(m);
    case MsgType::observe: return decode<Observe>(m);
    case MsgType::native_error: return decode<NativeError>(m);
    case MsgType::skip: return decode<Skip>(m);
    case MsgType::step: return decode<Step>(m);
    case MsgType::proceed: return decode<Proceed>(m);
    case MsgType::audit: return decode<Audit>(m);
    case MsgType::info: return decode<Info>(m);
    case MsgType::data: return decode<Data>(m);
    case MsgType::peer_exit: return decode<PeerExit>(m);
    case MsgType::kill_peer: return decode<KillPeer>(m);
    case MsgType::done: return decode<Done>(m);
    case MsgType::harness_error: return decode<HarnessError>(m);
    case MsgType::peer_start: return decode<PeerStart>(m);
    case MsgType::initialised: return decode<Initialised>(m);
    case MsgType::want_start: return decode<WantStart>(m);
    case MsgType::start_granted: return decode<StartGranted>(m);
  }
  throw ChannelError("channel: " + type_shown(m.type) + " is none of this protocol's (version " +
                     std::to_string(kProtocolVersion) + ")");
}

}  // namespace ipcheck::msg
