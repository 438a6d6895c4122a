// The channel's codec (ipcheck/messages.hpp): every message's fields, in order, written and
// read here and nowhere else.
#include "ipcheck/messages.hpp"

#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <string_view>

#include "ipcheck/reports/files.hpp"

namespace ipcheck::msg {

using nlohmann::json;

namespace {

// A value as an error shows it: quoted, cut after 80 characters, unprintable bytes as \xNN.
std::string shown(std::string_view v) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out = "'";
  for (std::size_t i = 0; i < v.size() && i < 80; ++i) {
    const auto c = static_cast<unsigned char>(v[i]);
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      out += "\\x";
      out += kDigits[c >> 4];
      out += kDigits[c & 15];
    }
  }
  out += v.size() > 80 ? "'... (" + std::to_string(v.size()) + " bytes)" : "'";
  return out;
}

std::string type_shown(MsgType t) {
  const std::string name = msg_type_name(t);
  return name == "unknown" ? "message type " + std::to_string(static_cast<unsigned>(t)) : "a " + name + " message";
}

// One message's fields, read by name in order. Every error names the message, the field and
// what was found. The last `optional` names may be absent.
class Fields {
 public:
  Fields(const Message& m, MsgType want, std::initializer_list<const char*> names, std::size_t optional = 0)
      : m_(m), names_(names) {
    if (m.type != want)
      throw ChannelError("channel: expected a " + std::string(msg_type_name(want)) + " message, got " + type_shown(m.type));
    const std::size_t n = m.fields.size(), most = names_.size(), least = most - optional;
    if (n >= least && n <= most) return;
    std::string expected;
    for (const char* name : names_) expected += (expected.empty() ? "" : ", ") + std::string(name);
    const std::string counts = prefix() + "has " + std::to_string(n) + " field(s), " +
                               (optional ? std::to_string(least) + " to " : "") + std::to_string(most) +
                               " expected (" + expected + "): ";
    if (n < least) throw ChannelError(counts + "field '" + names_[n] + "' is missing");
    throw ChannelError(counts + "field " + std::to_string(most + 1) + " (" + shown(m.fields[most]) + ") is extra");
  }

  bool has(std::size_t i) const { return i < m_.fields.size(); }
  const std::string& text(std::size_t i) const { return m_.fields[i]; }
  std::vector<std::byte> bytes(std::size_t i) const {
    const auto* p = reinterpret_cast<const std::byte*>(m_.fields[i].data());
    return {p, p + m_.fields[i].size()};
  }

  long long number(std::size_t i, long long least, long long most) const {
    const std::string& v = m_.fields[i];
    long long out = 0;
    const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
    if (v.empty() || ec != std::errc() || end != v.data() + v.size()) fail(i, "not a number");
    if (out < least || out > most)
      fail(i, "out of range (" + std::to_string(least) + " to " + std::to_string(most) + ")");
    return out;
  }

  json document(std::size_t i) const {
    try {
      return json::parse(m_.fields[i]);
    } catch (const json::exception& e) {
      fail(i, std::string("not JSON (") + e.what() + ")");
    }
  }

  // Where a JSON field's members are read: DocReader's errors name the message and the field.
  DocReader reader(std::size_t i) const { return DocReader(prefix() + "field '" + names_[i] + "'", document(i)); }

  [[noreturn]] void fail(std::size_t i, const std::string& why) const {
    throw ChannelError(prefix() + "field '" + names_[i] + "' is " + shown(m_.fields[i]) + ": " + why);
  }

 private:
  std::string prefix() const { return "channel: " + std::string(msg_type_name(m_.type)) + " message: "; }

  const Message& m_;
  std::vector<const char*> names_;
};

Message make(MsgType t, std::vector<std::string> fields, const CarriedFd& fd = {}) {
  Message m;
  m.type = t;
  m.fields = std::move(fields);
  m.fd = CarriedFd::lend(fd.get());
  return m;
}

std::string field_of(const std::vector<std::byte>& bytes) {
  return std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

constexpr long long kMaxPid = 4'194'304;  // PID_MAX_LIMIT

}  // namespace

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

// ---------------------------------------------------------------- what a role reports

Message encode(const Check& m) { return make(MsgType::check, {reports::dump_json(m.report.to_json())}); }

template <>
Check decode<Check>(Message& m) {
  const Fields f(m, MsgType::check, {"report"});
  const json j = f.document(0);
  try {
    return {verdict::CheckReport::from_json(j)};
  } catch (const std::exception& e) {
    f.fail(0, e.what());
  }
}

Message encode(const Observe& m) { return make(MsgType::observe, {m.name, m.value, m.clause}); }

template <>
Observe decode<Observe>(Message& m) {
  const Fields f(m, MsgType::observe, {"name", "value", "clause"});
  return {f.text(0), f.text(1), f.text(2)};
}

Message encode(const NativeError& m) {
  const json j = {{"verb", m.verb}, {"errc", m.errc}, {"native", m.native}, {"native_name", m.native_name},
                  {"message", m.message}};
  return make(MsgType::native_error, {reports::dump_json(j)});
}

template <>
NativeError decode<NativeError>(Message& m) {
  const Fields f(m, MsgType::native_error, {"error"});
  const DocReader r = f.reader(0);
  return {r.text("verb"), r.text("errc"), r.integer("native"), r.text("native_name"), r.text("message")};
}

Message encode(const Skip& m) { return make(MsgType::skip, {m.reason, m.by}); }

template <>
Skip decode<Skip>(Message& m) {
  const Fields f(m, MsgType::skip, {"reason", "by"});
  Skip s{f.text(0), f.text(1)};
  if (!s.by.empty() && s.by != "runtime" && s.by != "runtime_init")
    throw ChannelError("message skip: field by is '" + s.by + "'; it is runtime, runtime_init or empty");
  return s;
}

Message encode(const Audit& m) { return make(MsgType::audit, {reports::dump_json(m.doc)}); }

template <>
Audit decode<Audit>(Message& m) {
  const Fields f(m, MsgType::audit, {"audit"});
  return {f.document(0)};
}

Message encode(const Info& m) { return make(MsgType::info, {reports::dump_json(m.doc)}); }

template <>
Info decode<Info>(Message& m) {
  const Fields f(m, MsgType::info, {"info"});
  return {f.document(0)};
}

json info_doc(const AdapterInfo& i) {
  json devices = json::array();
  for (const auto& d : i.devices) {
    json dj = {{"name", d.name}, {"uuid", d.uuid}, {"aspects", d.aspects}};
    if (!d.aspect_errors.empty()) dj["aspect_errors"] = d.aspect_errors;
    devices.push_back(std::move(dj));
  }
  return {{"driver_name", i.driver_name},     {"driver_version", i.driver_version},
          {"api_version", i.api_version},     {"devices", devices},
          {"handle_layout", i.handle_layout}, {"kind_layouts", i.kind_layouts},
          {"transport", i.transport},         {"extra", i.extra},
          {"unsupported_verbs", i.unsupported_verbs}};
}

AdapterInfo info_from_doc(const json& doc) {
  if (!doc.is_object()) throw ChannelError("channel: an adapter's info is " + std::string(doc.type_name()) + ", not an object");
  AdapterInfo i;
  // `read(field, target)`: the field converted into target when present.
  auto read = [&doc](const char* field, auto& target) {
    const auto it = doc.find(field);
    if (it == doc.end()) return;
    try {
      it->get_to(target);
    } catch (const json::exception& e) {
      throw ChannelError(std::string("channel: adapter info field '") + field + "' is malformed: " + e.what());
    }
  };
  read("driver_name", i.driver_name);
  read("driver_version", i.driver_version);
  read("api_version", i.api_version);
  read("handle_layout", i.handle_layout);
  read("kind_layouts", i.kind_layouts);
  read("transport", i.transport);
  read("extra", i.extra);
  read("unsupported_verbs", i.unsupported_verbs);
  json devices = json::array();
  read("devices", devices);
  if (!devices.is_array()) throw ChannelError("channel: adapter info field 'devices' is not an array");
  for (const json& d : devices) {
    DeviceInfo di;
    try {
      di.name = d.value("name", "");
      di.uuid = d.value("uuid", "");
      if (d.contains("aspects")) d.at("aspects").get_to(di.aspects);
      if (d.contains("aspect_errors")) d.at("aspect_errors").get_to(di.aspect_errors);
    } catch (const json::exception& e) {
      throw ChannelError(std::string("channel: adapter info field 'devices' is malformed: ") + e.what());
    }
    i.devices.push_back(std::move(di));
  }
  return i;
}

Message encode(const Data& m) { return make(MsgType::data, {m.key, m.doc}, m.fd); }

template <>
Data decode<Data>(Message& m) {
  const Fields f(m, MsgType::data, {"key", "document"});
  return {f.text(0), f.text(1), std::move(m.fd)};
}

Message encode(const HarnessError& m) { return make(MsgType::harness_error, {m.cause}); }

template <>
HarnessError decode<HarnessError>(Message& m) {
  const Fields f(m, MsgType::harness_error, {"cause"});
  return {f.text(0)};
}

Message encode(const Done& m) { return make(MsgType::done, {m.aborted ? "aborted" : "ok", m.message}); }

template <>
Done decode<Done>(Message& m) {
  const Fields f(m, MsgType::done, {"how", "message"});
  if (f.text(0) != "ok" && f.text(0) != "aborted") f.fail(0, "neither \"ok\" nor \"aborted\"");
  return {f.text(0) == "aborted", f.text(1)};
}

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

// ---------------------------------------------------------------- documents

DocReader::DocReader(const Data& d) : where_("channel: data message '" + d.key + "'") {
  try {
    doc_ = json::parse(d.doc);
  } catch (const json::exception& e) {
    throw ChannelError(where_ + ": the document " + shown(d.doc) + " is not JSON (" + e.what() + ")");
  }
}

void DocReader::fail(const char* member, const json& found, const std::string& why) const {
  const std::string what = member ? "member '" + std::string(member) + "'" : std::string("the document");
  throw ChannelError(where_ + ": " + what + " is " + shown(reports::dump_json(found)) + ": " + why);
}

const json& DocReader::at(const char* member) const {
  if (!member) return doc_;
  if (!doc_.is_object()) fail(nullptr, doc_, "not an object (member '" + std::string(member) + "' was read)");
  const auto it = doc_.find(member);
  if (it == doc_.end()) throw ChannelError(where_ + ": member '" + member + "' is missing");
  return *it;
}

std::string DocReader::text(const char* member) const {
  const json& j = at(member);
  if (!j.is_string()) fail(member, j, "not a string");
  return j.get<std::string>();
}

long long DocReader::integer(const char* member) const {
  const json& j = at(member);
  if (!j.is_number_integer()) fail(member, j, "not an integer");
  return j.get<long long>();
}

std::uint64_t DocReader::count(const char* member) const {
  const json& j = at(member);
  if (!j.is_number_unsigned()) fail(member, j, "not an unsigned integer");
  return j.get<std::uint64_t>();
}

bool DocReader::flag(const char* member) const {
  const json& j = at(member);
  if (!j.is_boolean()) fail(member, j, "not true or false");
  return j.get<bool>();
}

std::vector<std::string> DocReader::texts(const char* member) const {
  const json& j = at(member);
  std::vector<std::string> out;
  if (!j.is_array()) fail(member, j, "not an array of strings");
  for (const auto& s : j) {
    if (!s.is_string()) fail(member, j, "not an array of strings");
    out.push_back(s.get<std::string>());
  }
  return out;
}

std::vector<std::byte> DocReader::bytes(const char* member) const {
  const std::string digits = text(member);
  auto nibble = [&](char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    fail(member, digits, "not lowercase hex digits");
  };
  if (digits.size() % 2) fail(member, digits, "an odd number of hex digits");
  std::vector<std::byte> out;
  for (std::size_t i = 0; i < digits.size(); i += 2)
    out.push_back(static_cast<std::byte>(nibble(digits[i]) << 4 | nibble(digits[i + 1])));
  return out;
}

std::string hex(std::span<const std::byte> bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (const std::byte b : bytes) {
    out += kDigits[std::to_integer<unsigned>(b) >> 4];
    out += kDigits[std::to_integer<unsigned>(b) & 15];
  }
  return out;
}

}  // namespace ipcheck::msg
