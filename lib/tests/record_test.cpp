// The handle record codec (record.hpp): encoding, layout, reseal, and check().
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "ipcref/record.hpp"

namespace {

using namespace ipcref;

record::fields sample_fields() {
  record::fields f;
  f.object_kind = record::kind::physical_memory;
  f.guard_type = record::guard_kind::start_time;
  f.pid = 0x00123456;
  f.fd = 0x0789abcd;
  f.guard = 0x1122334455667788ull;
  f.token = 0x99aabbccddeeff01ull;
  f.size = 0x0000012345678000ull;
  f.offset = 0x0000000000abc000ull;
  f.device = 0x0badf00d;
  f.slot = 0x00000042;
  return f;
}

template <class T>
T read_le(const record::bytes& b, std::size_t at, std::size_t width) {
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < width; ++i) v |= static_cast<std::uint64_t>(b[at + i]) << (8 * i);
  return static_cast<T>(v);
}

const record::field_desc& field(const char* name) {
  for (const auto& d : record::layout())
    if (std::string(d.name) == name) return d;
  throw std::runtime_error(std::string("record layout has no field ") + name);
}

// Writes `value` little-endian into the field `name` of `b`.
void poke(record::bytes& b, const char* name, std::uint64_t value) {
  const auto& d = field(name);
  for (std::size_t i = 0; i < d.width; ++i) b[d.offset + i] = static_cast<std::byte>((value >> (8 * i)) & 0xff);
}

record::bytes sound_record() {
  record::fields f = sample_fields();
  f.object_kind = record::kind::memory;
  f.guard_type = record::guard_kind::pidfs_inode;
  f.size = 4096;
  f.offset = 0;
  return record::encode(f);
}

std::optional<std::string> check_memory(std::span<const std::byte> b) {
  return record::check(b, record::kind::memory, "sycl.mem.open.size");
}

TEST(Record, encode_decode_roundtrip_every_field) {
  const record::fields in = sample_fields();
  const record::bytes b = record::encode(in);
  const record::fields out = record::decode(b);
  EXPECT_EQ(out.magic, record::magic);
  EXPECT_EQ(out.version, record::version);
  EXPECT_EQ(out.object_kind, in.object_kind);
  EXPECT_EQ(out.guard_type, in.guard_type);
  EXPECT_EQ(out.pid, in.pid);
  EXPECT_EQ(out.fd, in.fd);
  EXPECT_EQ(out.guard, in.guard);
  EXPECT_EQ(out.token, in.token);
  EXPECT_EQ(out.size, in.size);
  EXPECT_EQ(out.offset, in.offset);
  EXPECT_EQ(out.device, in.device);
  EXPECT_EQ(out.slot, in.slot);
  // encode ignores the input's checksum and writes FNV-1a of bytes 0..55.
  EXPECT_EQ(out.checksum, record::checksum(std::span(b).first(56)));
  // "IPCK" in the first four bytes, whatever the host's byte order.
  EXPECT_EQ(std::memcmp(b.data(), "IPCK", 4), 0);
}

TEST(Record, encode_negative_fd_roundtrips) {
  record::fields in = sample_fields();
  in.fd = -1;
  EXPECT_EQ(record::decode(record::encode(in)).fd, -1);
}

TEST(Record, layout_tiles_the_record) {
  const auto layout = record::layout();
  ASSERT_FALSE(layout.empty());
  std::size_t at = 0;
  std::set<std::string> names;
  for (const auto& d : layout) {
    EXPECT_EQ(d.offset, at) << d.name << " leaves a gap or overlaps";
    EXPECT_TRUE(d.width == 1 || d.width == 2 || d.width == 4 || d.width == 8) << d.name;
    EXPECT_TRUE(names.insert(d.name).second) << d.name << " is listed twice";
    at = d.offset + d.width;
  }
  EXPECT_EQ(at, record::size);
  EXPECT_EQ(names, (std::set<std::string>{"magic", "version", "kind", "guard_kind", "pid", "fd", "guard", "token",
                                          "size", "offset", "device", "slot", "checksum"}));
}

TEST(Record, layout_matches_encoding) {
  const record::fields f = sample_fields();
  const record::bytes b = record::encode(f);
  // Every field of the layout reads back, at its offset and width, the value encode wrote.
  const std::vector<std::pair<const char*, std::uint64_t>> expected = {
      {"magic", record::magic},
      {"version", record::version},
      {"kind", static_cast<std::uint64_t>(f.object_kind)},
      {"guard_kind", static_cast<std::uint64_t>(f.guard_type)},
      {"pid", f.pid},
      {"fd", static_cast<std::uint32_t>(f.fd)},
      {"guard", f.guard},
      {"token", f.token},
      {"size", f.size},
      {"offset", f.offset},
      {"device", f.device},
      {"slot", f.slot},
      {"checksum", record::checksum(std::span(b).first(56))},
  };
  for (const auto& [name, value] : expected) {
    const auto& d = field(name);
    EXPECT_EQ(read_le<std::uint64_t>(b, d.offset, d.width), value) << "field " << name;
  }
  // And writing through the layout is what decode reads.
  for (const auto& d : record::layout()) {
    if (std::string(d.name) == "checksum") continue;
    record::bytes m = b;
    poke(m, d.name, 0x5a);
    record::reseal(m);
    const record::fields g = record::decode(m);
    const std::string name = d.name;
    const std::uint64_t got = name == "magic"        ? g.magic
                              : name == "version"    ? g.version
                              : name == "kind"       ? static_cast<std::uint64_t>(g.object_kind)
                              : name == "guard_kind" ? static_cast<std::uint64_t>(g.guard_type)
                              : name == "pid"        ? g.pid
                              : name == "fd"         ? static_cast<std::uint64_t>(g.fd)
                              : name == "guard"      ? g.guard
                              : name == "token"      ? g.token
                              : name == "size"       ? g.size
                              : name == "offset"     ? g.offset
                              : name == "device"     ? g.device
                                                     : g.slot;
    EXPECT_EQ(got, 0x5au) << "field " << d.name;
  }
}

TEST(Record, checksum_covers_every_byte_before_it) {
  const record::bytes b = sound_record();
  for (std::size_t i = 0; i < 56; ++i) {
    record::bytes m = b;
    m[i] ^= std::byte{0x01};
    EXPECT_NE(record::checksum(std::span(m).first(56)), record::checksum(std::span(b).first(56))) << "byte " << i;
  }
}

TEST(Record, reseal_restores_a_mutated_record) {
  record::bytes b = sound_record();
  ASSERT_EQ(check_memory(b), std::nullopt);
  poke(b, "device", 7);
  const auto broken = check_memory(b);
  ASSERT_TRUE(broken.has_value());
  EXPECT_NE(broken->find("checksum"), std::string::npos) << *broken;
  record::reseal(b);
  EXPECT_EQ(check_memory(b), std::nullopt);
  EXPECT_EQ(record::decode(b).device, 7u);
  EXPECT_EQ(record::decode(b).checksum, record::checksum(std::span(b).first(56)));
  // Resealing a sound record changes nothing.
  const record::bytes again = b;
  record::reseal(b);
  EXPECT_EQ(b, again);
}

TEST(Record, check_accepts_every_kind_it_expects) {
  for (record::kind k : {record::kind::memory, record::kind::physical_memory, record::kind::event}) {
    record::fields f = record::decode(sound_record());
    f.object_kind = k;
    EXPECT_EQ(record::check(record::encode(f), k, "x"), std::nullopt) << record::kind_name(k);
  }
}

struct bad_case {
  const char* what;
  std::function<void(record::bytes&)> mutate;  // on a sound record; resealed after unless noted
  bool reseal;
  std::vector<std::string> mentions;  // what the message must name
};

// check() reports each bad field by name (and value), never an unrelated one.
TEST(Record, check_names_the_bad_field) {
  const std::vector<bad_case> cases = {
      {"magic", [](auto& b) { poke(b, "magic", 0x4b435058); }, true, {"magic", "0x4b435058", "IPCK"}},
      {"version 0", [](auto& b) { poke(b, "version", 0); }, true, {"version 0"}},
      {"version 2", [](auto& b) { poke(b, "version", 2); }, true, {"version 2", "version 1"}},
      {"checksum", [](auto& b) { b[60] ^= std::byte{0x80}; }, false, {"checksum"}},
      {"altered byte", [](auto& b) { poke(b, "token", 5); }, false, {"checksum", "altered"}},
      {"kind 0", [](auto& b) { poke(b, "kind", 0); }, true, {"kind 0", "unknown"}},
      {"kind 9", [](auto& b) { poke(b, "kind", 9); }, true, {"kind 9", "unknown"}},
      {"other kind", [](auto& b) { poke(b, "kind", 3); }, true, {"event handle", "expected memory"}},
      {"guard kind 0", [](auto& b) { poke(b, "guard_kind", 0); }, true, {"guard kind 0"}},
      {"guard kind 3", [](auto& b) { poke(b, "guard_kind", 3); }, true, {"guard kind 3"}},
      {"pid 0", [](auto& b) { poke(b, "pid", 0); }, true, {"pid 0"}},
      {"pid over the limit", [](auto& b) { poke(b, "pid", 4194305); }, true, {"pid 4194305"}},
      {"fd -1", [](auto& b) { poke(b, "fd", 0xffffffff); }, true, {"descriptor -1", "negative"}},
      {"fd INT_MIN", [](auto& b) { poke(b, "fd", 0x80000000); }, true, {"descriptor -2147483648"}},
      {"size 0", [](auto& b) { poke(b, "size", 0); }, true, {"0 bytes"}},
      {"huge size", [](auto& b) { poke(b, "size", 1ull << 47); }, true, {"size 140737488355328"}},
      {"max size", [](auto& b) { poke(b, "size", ~0ull); }, true, {"size 18446744073709551615"}},
      {"huge offset", [](auto& b) { poke(b, "offset", 1ull << 47); }, true, {"offset 140737488355328"}},
      {"token 0", [](auto& b) { poke(b, "token", 0); }, true, {"token is 0"}},
  };
  for (const bad_case& c : cases) {
    SCOPED_TRACE(c.what);
    record::bytes b = sound_record();
    c.mutate(b);
    if (c.reseal) record::reseal(b);
    const auto problem = check_memory(b);
    ASSERT_TRUE(problem.has_value()) << "accepted";
    for (const std::string& m : c.mentions) EXPECT_NE(problem->find(m), std::string::npos) << *problem;
  }
}

// A wrong byte count names the count, the expected count and the caller's clause.
TEST(Record, check_names_the_wrong_size_and_clause) {
  const record::bytes b = sound_record();
  std::vector<std::byte> longer(b.begin(), b.end());
  longer.push_back(std::byte{0});
  const std::vector<std::byte> huge(1 << 20);
  struct length_case {
    std::span<const std::byte> data;
    std::string count;
  };
  for (const auto& [data, count] : {length_case{{}, "0 bytes"}, length_case{std::span(b).first(63), "63 bytes"},
                                    length_case{longer, "65 bytes"}, length_case{huge, "1048576 bytes"}}) {
    const auto problem = record::check(data, record::kind::event, "ur.event.open.size");
    ASSERT_TRUE(problem.has_value()) << count;
    EXPECT_NE(problem->find(count), std::string::npos) << *problem;
    EXPECT_NE(problem->find("expected 64"), std::string::npos) << *problem;
    EXPECT_NE(problem->find("ur.event.open.size"), std::string::npos) << *problem;
  }
}

// Fields open() judges itself (device, slot, guard value) are not framing: check() passes them.
TEST(Record, check_leaves_identity_fields_to_open) {
  record::bytes b = sound_record();
  poke(b, "device", 0xffffffff);
  poke(b, "slot", 0xffffffff);
  poke(b, "guard", 0);
  record::reseal(b);
  EXPECT_EQ(check_memory(b), std::nullopt);
}

TEST(Record, kind_names) {
  EXPECT_STREQ(record::kind_name(record::kind::memory), "memory");
  EXPECT_STREQ(record::kind_name(record::kind::physical_memory), "physical_memory");
  EXPECT_STREQ(record::kind_name(record::kind::event), "event");
  EXPECT_STREQ(record::kind_name(static_cast<record::kind>(0)), "unknown");
}

}  // namespace
