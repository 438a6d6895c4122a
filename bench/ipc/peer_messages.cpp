// ipcheck-bench-ipc's messages (peer_messages.hpp): each one's members written and read here.
#include "peer_messages.hpp"

#include <nlohmann/json.hpp>

namespace ipcheck::bench::wire {

using nlohmann::json;

namespace {

Message as_data(const char* key, const json& doc, const CarriedFd& fd = {}) {
  return msg::encode(msg::Data{key, doc.dump(), CarriedFd::lend(fd.get())});
}

json exported(std::uint64_t size, const std::vector<std::byte>& bytes) {
  return {{"size", size}, {"hex", msg::hex(bytes)}};
}

}  // namespace

Message encode(const MemExport& m) { return as_data(MemExport::key, exported(m.size, m.bytes), m.fd); }
Message encode(const PhysExport& m) { return as_data(PhysExport::key, exported(m.size, m.bytes), m.fd); }

Message encode(const EventExport& m) {
  return as_data(EventExport::key, {{"which", m.ping ? "ping" : "pong"}, {"hex", msg::hex(m.bytes)}}, m.fd);
}

Message encode(const Skip& m) { return as_data(Skip::key, {{"benchmark", m.benchmark}, {"why", m.why}}); }
Message encode(const Control& m) { return as_data(Control::key, json::object(), m.fd); }
Message encode(const Ready&) { return as_data(Ready::key, json::object()); }
Message encode(const Error& m) { return as_data(Error::key, {{"why", m.why}}); }
Message encode(const Echo& m) { return as_data(Echo::key, {{"loop", m.floor ? "floor" : "adapter"}}); }
Message encode(const Echoed& m) { return as_data(Echoed::key, {{"error", m.error}}); }
Message encode(const Quit&) { return as_data(Quit::key, json::object()); }

Any decode(Message& m) {
  msg::Data d = msg::decode<msg::Data>(m);
  const msg::DocReader r(d);
  if (d.key == MemExport::key) return MemExport{r.count("size"), r.bytes("hex"), std::move(d.fd)};
  if (d.key == PhysExport::key) return PhysExport{r.count("size"), r.bytes("hex"), std::move(d.fd)};
  if (d.key == EventExport::key) {
    const std::string which = r.text("which");
    if (which != "ping" && which != "pong") r.fail("which", which, "neither \"ping\" nor \"pong\"");
    return EventExport{which == "ping", r.bytes("hex"), std::move(d.fd)};
  }
  if (d.key == Skip::key) return Skip{r.text("benchmark"), r.text("why")};
  if (d.key == Control::key) {
    if (!d.fd) throw ChannelError("bench: data message 'control' came without its descriptor (the control page)");
    return Control{std::move(d.fd)};
  }
  if (d.key == Ready::key) return Ready{};
  if (d.key == Error::key) return Error{r.text("why")};
  if (d.key == Echo::key) {
    const std::string loop = r.text("loop");
    if (loop != "floor" && loop != "adapter") r.fail("loop", loop, "neither \"floor\" nor \"adapter\"");
    return Echo{loop == "floor"};
  }
  if (d.key == Echoed::key) return Echoed{r.text("error")};
  if (d.key == Quit::key) return Quit{};
  throw ChannelError("bench: data message '" + d.key + "' is none of ipcheck-bench-ipc's messages");
}

}  // namespace ipcheck::bench::wire
