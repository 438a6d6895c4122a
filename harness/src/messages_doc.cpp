// DocReader and hex (ipcheck/messages.hpp): the JSON documents of data messages and of this
// protocol's JSON fields, read member by member with errors that name where they came from.
#include "ipcheck/messages.hpp"

#include <string>

#include "ipcheck/reports/files.hpp"
#include "messages_codec.hpp"

namespace ipcheck::msg {

using namespace codec;

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
