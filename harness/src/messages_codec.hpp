// The codec's own tools, shared by its files (messages.hpp): messages.cpp (hello, start, any
// message by its type), messages_flow.cpp (send, deliver, barriers, steps), messages_report.cpp
// (what a role reports), messages_peers.cpp (peers, start slots) and messages_doc.cpp
// (DocReader). Private to harness/src.
#pragma once

#include <charconv>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "ipcheck/messages.hpp"

namespace ipcheck::msg::codec {

using nlohmann::json;

// A value as an error shows it: quoted, cut after 80 characters, unprintable bytes as \xNN.
inline std::string shown(std::string_view v) {
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

inline std::string type_shown(MsgType t) {
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

inline Message make(MsgType t, std::vector<std::string> fields, const CarriedFd& fd = {}) {
  Message m;
  m.type = t;
  m.fields = std::move(fields);
  m.fd = CarriedFd::lend(fd.get());
  return m;
}

inline std::string field_of(const std::vector<std::byte>& bytes) {
  return std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

inline constexpr long long kMaxPid = 4'194'304;  // PID_MAX_LIMIT

}  // namespace ipcheck::msg::codec
