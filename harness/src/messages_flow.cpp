// The codec of a case's flow (ipcheck/messages.hpp): what the runner relays (send, deliver)
// and what orders the roles (barriers, steps).
#include "ipcheck/messages.hpp"

#include "messages_codec.hpp"

namespace ipcheck::msg {

using namespace codec;

// ---------------------------------------------------------------- send, deliver

Message encode(const Send& m) { return make(MsgType::send, {m.to, m.tag, field_of(m.bytes)}, m.fd); }

template <>
Send decode<Send>(Message& m) {
  const Fields f(m, MsgType::send, {"to", "tag", "bytes"});
  return {f.text(0), f.text(1), f.bytes(2), std::move(m.fd)};
}

Message encode(const Deliver& m) { return make(MsgType::deliver, {m.from, m.tag, field_of(m.bytes)}, m.fd); }

template <>
Deliver decode<Deliver>(Message& m) {
  const Fields f(m, MsgType::deliver, {"from", "tag", "bytes"});
  return {f.text(0), f.text(1), f.bytes(2), std::move(m.fd)};
}

// ---------------------------------------------------------------- barriers, steps

Message encode(const Barrier& m) { return make(MsgType::barrier, {m.name}); }

template <>
Barrier decode<Barrier>(Message& m) {
  const Fields f(m, MsgType::barrier, {"name"});
  return {f.text(0)};
}

Message encode(const Release& m) { return make(MsgType::release, {m.name, m.broken}); }

template <>
Release decode<Release>(Message& m) {
  const Fields f(m, MsgType::release, {"name", "broken"});
  return {f.text(0), f.text(1)};
}

// A step on its way into a blocking call has a second field, "into".
Message encode(const Step& m) {
  if (m.into) return make(MsgType::step, {m.name, "into"});
  return make(MsgType::step, {m.name});
}

template <>
Step decode<Step>(Message& m) {
  const Fields f(m, MsgType::step, {"name", "into"}, 1);
  if (f.has(1) && f.text(1) != "into") f.fail(1, "not \"into\"");
  return {f.text(0), f.has(1)};
}

Message encode(const Proceed& m) { return make(MsgType::proceed, {m.name}); }

template <>
Proceed decode<Proceed>(Message& m) {
  const Fields f(m, MsgType::proceed, {"name"});
  return {f.text(0)};
}

}  // namespace ipcheck::msg
