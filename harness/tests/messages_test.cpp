// The channel's codec (ipcheck/messages.hpp): every message survives a trip over a real
// channel, descriptors included, and a packet of the wrong type, with a field missing, extra
// or malformed, or from another protocol version, is a ChannelError that names the message,
// the field and what was found.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "ipcheck/messages.hpp"

namespace ipcheck::messages_test {
namespace {

using nlohmann::json;

std::vector<std::byte> bytes_of(const std::string& s) {
  const auto* p = reinterpret_cast<const std::byte*>(s.data());
  return {p, p + s.size()};
}

// Sends `m` over a fresh channel and decodes what arrives, as a T and as msg::Any.
template <class T>
T round_trip(const T& m) {
  auto [a, b] = make_channel_pair();
  Channel x(std::move(a)), y(std::move(b));
  EXPECT_TRUE(x.send(m));
  auto got = y.receive(1000);
  EXPECT_TRUE(got.has_value());
  if (!got) return T{};
  EXPECT_EQ(got->type, T::type);
  Message copy;
  copy.type = got->type;
  copy.fields = got->fields;
  EXPECT_TRUE(std::holds_alternative<T>(msg::decode_any(copy))) << msg_type_name(T::type);
  return msg::decode<T>(*got);
}

// A packet built by hand, for what the codec would never send.
Message packet(MsgType type, std::vector<std::string> fields) {
  Message m;
  m.type = type;
  m.fields = std::move(fields);
  return m;
}

// The ChannelError that decoding `m` as a T throws ("" and a test failure when none).
template <class T>
std::string decode_error(Message m) {
  try {
    msg::decode<T>(m);
  } catch (const ChannelError& e) {
    return e.what();
  }
  ADD_FAILURE() << "decoding did not throw";
  return "";
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(Messages, HelloStartAndTheRunnersAnswersRoundTrip) {
  const auto hello = round_trip(msg::Hello{msg::kProtocolVersion, "consumer", 4242, "0x7f00aa"});
  EXPECT_EQ(hello.version, msg::kProtocolVersion);
  EXPECT_EQ(hello.role, "consumer");
  EXPECT_EQ(hello.pid, 4242);
  EXPECT_EQ(hello.verb_mark, "0x7f00aa");
  const json doc = {{"peers", {{"producer", 1}, {"consumer", 2}}}, {"steps", true}};
  EXPECT_EQ(round_trip(msg::Start{doc}).doc, doc);
  const auto release = round_trip(msg::Release{"met", "producer ended (exit 3) before reaching it"});
  EXPECT_EQ(release.name, "met");
  EXPECT_EQ(release.broken, "producer ended (exit 3) before reaching it");
  EXPECT_EQ(round_trip(msg::Proceed{"second"}).name, "second");
  const auto exit = round_trip(msg::PeerExit{"producer", "signal SIGKILL"});
  EXPECT_EQ(exit.role, "producer");
  EXPECT_EQ(exit.how, "signal SIGKILL");
  const auto late = round_trip(msg::PeerStart{"consumer7", 31337});
  EXPECT_EQ(late.role, "consumer7");
  EXPECT_EQ(late.pid, 31337);
}

TEST(Messages, WhatARoleReportsRoundTrips) {
  EXPECT_EQ(round_trip(msg::Barrier{"met"}).name, "met");
  EXPECT_NEAR(round_trip(msg::Initialised{0.25}).seconds, 0.25, 1e-9);
  (void)round_trip(msg::WantStart{});
  (void)round_trip(msg::StartGranted{});
  const auto observe = round_trip(msg::Observe{"import.latency", "12 us", "sycl.mem.open"});
  EXPECT_EQ(observe.name, "import.latency");
  EXPECT_EQ(observe.value, "12 us");
  EXPECT_EQ(observe.clause, "sycl.mem.open");
  const auto native = round_trip(msg::NativeError{"mem_open", "invalid", -7, "ZE_RESULT_ERROR_INVALID_ARGUMENT", "bad"});
  EXPECT_EQ(native.verb, "mem_open");
  EXPECT_EQ(native.errc, "invalid");
  EXPECT_EQ(native.native, -7);
  EXPECT_EQ(native.native_name, "ZE_RESULT_ERROR_INVALID_ARGUMENT");
  EXPECT_EQ(native.message, "bad");
  EXPECT_EQ(round_trip(msg::Skip{"no second device", ""}).reason, "no second device");
  EXPECT_EQ(round_trip(msg::Skip{"urContextCreate failed", "runtime_init"}).by, "runtime_init");
  const auto plain = round_trip(msg::Step{"first", false});
  EXPECT_EQ(plain.name, "first");
  EXPECT_FALSE(plain.into);
  const auto into = round_trip(msg::Step{"waiting", true});
  EXPECT_EQ(into.name, "waiting");
  EXPECT_TRUE(into.into);
  const json audit = {{"method", "proc"}, {"leaks", json::array()}};
  EXPECT_EQ(round_trip(msg::Audit{audit}).doc, audit);
  const json info = {{"driver_name", "ref"}, {"devices", json::array()}};
  EXPECT_EQ(round_trip(msg::Info{info}).doc, info);
  const auto kill = round_trip(msg::KillPeer{"consumer", 9});
  EXPECT_EQ(kill.role, "consumer");
  EXPECT_EQ(kill.signal, 9);
  const auto done = round_trip(msg::Done{true, "adapter init failed"});
  EXPECT_TRUE(done.aborted);
  EXPECT_EQ(done.message, "adapter init failed");
  EXPECT_FALSE(round_trip(msg::Done{false, ""}).aborted);
  EXPECT_EQ(round_trip(msg::HarnessError{"ulimit -n is 16"}).cause, "ulimit -n is 16");
}

// The adapter's info, as the probe sends it and the runner reads it to judge preconditions.
TEST(Messages, AdapterInfoRoundTripsAndAMalformedFieldIsNamed) {
  AdapterInfo in;
  in.driver_name = "d";
  in.driver_version = "1.2";
  in.handle_layout = "opaque";
  in.kind_layouts["event"] = "opaque";
  in.transport = "pidfd";
  in.extra["k"] = "v";
  in.unsupported_verbs["mem_put"] = "no put here";
  in.devices.push_back({"gpu0", "uuid-0", {{"ipc_memory", true}, {"ipc_event", false}}});
  const AdapterInfo out = msg::info_from_doc(msg::info_doc(in));
  EXPECT_EQ(out.driver_name, "d");
  EXPECT_EQ(out.driver_version, "1.2");
  EXPECT_EQ(out.kind_layouts, in.kind_layouts);
  EXPECT_EQ(out.extra, in.extra);
  EXPECT_EQ(out.unsupported_verbs, in.unsupported_verbs);
  ASSERT_EQ(out.devices.size(), 1u);
  EXPECT_EQ(out.devices[0].name, "gpu0");
  EXPECT_EQ(out.devices[0].aspects, in.devices[0].aspects);
  // An info from an older role (no unsupported_verbs) reads with none.
  nlohmann::json older = msg::info_doc(in);
  older.erase("unsupported_verbs");
  EXPECT_TRUE(msg::info_from_doc(older).unsupported_verbs.empty());
  nlohmann::json bad = msg::info_doc(in);
  bad["devices"][0]["aspects"] = "all";
  try {
    msg::info_from_doc(bad);
    ADD_FAILURE() << "a string of aspects was read";
  } catch (const ChannelError& e) {
    EXPECT_NE(std::string(e.what()).find("'devices'"), std::string::npos) << e.what();
  }
  EXPECT_THROW(msg::info_from_doc(nlohmann::json::array()), ChannelError);
}

TEST(Messages, CheckKeepsEveryMemberOfItsReport) {
  verdict::CheckReport r;
  r.clause = "sycl.mem.open";
  r.ok = false;
  r.message = "open of a put export succeeded";
  r.where = "cases/memory/put.cpp:42";
  r.by = reports::Decider::runtime;
  r.call = "zeMemOpenIpcHandle";
  r.native = 0x78000004;
  r.native_name = "ZE_RESULT_ERROR_INVALID_ARGUMENT";
  r.setup = true;
  EXPECT_EQ(round_trip(msg::Check{r}).report.to_json(), r.to_json());
}

// Bytes of every value, and a descriptor that arrives as the receiver's own copy of the file.
TEST(Messages, SendDeliverAndDataCarryBytesAndADescriptor) {
  unique_fd file(::open("/proc/self/exe", O_RDONLY | O_CLOEXEC));
  ASSERT_TRUE(file);
  const std::string binary("\0\1\2\xff handle", 11);
  auto send = round_trip(msg::Send{"consumer", "handle", bytes_of(binary), CarriedFd::lend(file.get())});
  EXPECT_EQ(send.to, "consumer");
  EXPECT_EQ(send.tag, "handle");
  EXPECT_EQ(send.bytes, bytes_of(binary));
  ASSERT_TRUE(send.fd.owned());
  struct stat sent{}, received{};
  ASSERT_EQ(::fstat(file.get(), &sent), 0);
  ASSERT_EQ(::fstat(send.fd.get(), &received), 0);
  EXPECT_EQ(sent.st_ino, received.st_ino);
  EXPECT_NE(send.fd.get(), file.get());

  auto deliver = round_trip(msg::Deliver{"producer", "handle", bytes_of(binary), CarriedFd::lend(file.get())});
  EXPECT_EQ(deliver.from, "producer");
  EXPECT_EQ(deliver.tag, "handle");
  EXPECT_EQ(deliver.bytes, bytes_of(binary));
  const unique_fd taken = deliver.fd.take();
  EXPECT_TRUE(taken);
  EXPECT_FALSE(deliver.fd) << "take() leaves nothing behind";

  const auto without = round_trip(msg::Deliver{"producer", "empty", {}, {}});
  EXPECT_TRUE(without.bytes.empty());
  EXPECT_FALSE(without.fd);

  auto data = round_trip(msg::Data{"stress.cycles", R"({"cycles":3})", CarriedFd::lend(file.get())});
  EXPECT_EQ(data.key, "stress.cycles");
  EXPECT_EQ(data.doc, R"({"cycles":3})");
  EXPECT_TRUE(data.fd.owned());
}

TEST(Messages, EncodingLendsTheDescriptorAndNeverClosesIt) {
  unique_fd file(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  ASSERT_TRUE(file);
  {
    const msg::Send s{"consumer", "t", {}, CarriedFd::lend(file.get())};
    Message m = msg::encode(s);
    EXPECT_EQ(m.fd.get(), file.get());
    EXPECT_FALSE(m.fd.owned());
  }
  EXPECT_GE(::fcntl(file.get(), F_GETFD), 0) << "the lender's descriptor is still open";
}

TEST(Messages, AnotherTypeIsRefusedNamingBoth) {
  const std::string e = decode_error<msg::Release>(msg::encode(msg::Barrier{"met"}));
  EXPECT_TRUE(has(e, "expected a release message, got a barrier message")) << e;
  const std::string unknown = decode_error<msg::Barrier>(packet(static_cast<MsgType>(77), {"x"}));
  EXPECT_TRUE(has(unknown, "message type 77")) << unknown;
  Message any = packet(static_cast<MsgType>(77), {"x"});
  EXPECT_THROW(msg::decode_any(any), ChannelError);
}

TEST(Messages, AMissingFieldIsNamed) {
  const std::string e = decode_error<msg::Release>(packet(MsgType::release, {"met"}));
  EXPECT_TRUE(has(e, "release message")) << e;
  EXPECT_TRUE(has(e, "field 'broken' is missing")) << e;
  EXPECT_TRUE(has(e, "has 1 field(s), 2 expected (name, broken)")) << e;
  const std::string hello = decode_error<msg::Hello>(packet(MsgType::hello, {std::to_string(msg::kProtocolVersion), "producer", "42"}));
  EXPECT_TRUE(has(hello, "hello message")) << hello;
  EXPECT_TRUE(has(hello, "field 'verb_mark' is missing")) << hello;
}

TEST(Messages, AnExtraFieldIsNamedWithItsValue) {
  const std::string e = decode_error<msg::Barrier>(packet(MsgType::barrier, {"met", "surplus"}));
  EXPECT_TRUE(has(e, "barrier message")) << e;
  EXPECT_TRUE(has(e, "field 2 ('surplus') is extra")) << e;
  const std::string step = decode_error<msg::Step>(packet(MsgType::step, {"first", "into", "more"}));
  EXPECT_TRUE(has(step, "1 to 2 expected")) << step;
}

TEST(Messages, AMalformedFieldIsNamedWithItsValue) {
  const std::string number = decode_error<msg::KillPeer>(packet(MsgType::kill_peer, {"consumer", "nine"}));
  EXPECT_TRUE(has(number, "kill_peer message: field 'signal' is 'nine': not a number")) << number;
  const std::string secs = decode_error<msg::Initialised>(packet(MsgType::initialised, {"soon"}));
  EXPECT_TRUE(has(secs, "initialised message: field 'seconds' is 'soon': not a number of seconds")) << secs;
  const std::string extra = decode_error<msg::WantStart>(packet(MsgType::want_start, {"now"}));
  EXPECT_TRUE(has(extra, "want_start message: has 1 field(s), 0 expected")) << extra;
  const std::string range = decode_error<msg::KillPeer>(packet(MsgType::kill_peer, {"consumer", "0"}));
  EXPECT_TRUE(has(range, "field 'signal' is '0': out of range")) << range;
  const std::string pid = decode_error<msg::Hello>(packet(MsgType::hello, {std::to_string(msg::kProtocolVersion), "producer", "12ab", ""}));
  EXPECT_TRUE(has(pid, "hello message: field 'pid' is '12ab': not a number")) << pid;
  const std::string json_field = decode_error<msg::Check>(packet(MsgType::check, {"{not json"}));
  EXPECT_TRUE(has(json_field, "check message: field 'report' is '{not json': not JSON")) << json_field;
  const std::string report = decode_error<msg::Check>(packet(MsgType::check, {R"({"clause": 3})"}));
  EXPECT_TRUE(has(report, "check message: field 'report'")) << report;
  const std::string member = decode_error<msg::NativeError>(packet(MsgType::native_error, {R"({"verb": "open"})"}));
  EXPECT_TRUE(has(member, "native_error message: field 'error': member 'errc' is missing")) << member;
  const std::string step = decode_error<msg::Step>(packet(MsgType::step, {"first", "onto"}));
  EXPECT_TRUE(has(step, "field 'into' is 'onto'")) << step;
  const std::string done = decode_error<msg::Done>(packet(MsgType::done, {"fine", ""}));
  EXPECT_TRUE(has(done, "done message: field 'how' is 'fine'")) << done;
  // Binary values are shown escaped, and long ones cut.
  const std::string binary = decode_error<msg::KillPeer>(packet(MsgType::kill_peer, {"c", std::string("\x01\xff", 2)}));
  EXPECT_TRUE(has(binary, R"('\x01\xff')")) << binary;
  const std::string long_value = decode_error<msg::KillPeer>(packet(MsgType::kill_peer, {"c", std::string(500, '7')}));
  EXPECT_TRUE(has(long_value, "(500 bytes)")) << long_value;
}

TEST(Messages, AHelloOfAnotherVersionNamesBothAndTheFix) {
  const std::string next = std::to_string(msg::kProtocolVersion + 1);
  const std::string e = decode_error<msg::Hello>(msg::encode(msg::Hello{msg::kProtocolVersion + 1, "producer", 42, ""}));
  EXPECT_TRUE(has(e, "the role speaks protocol version " + next)) << e;
  EXPECT_TRUE(has(e, "this ipcheck speaks protocol version " + std::to_string(msg::kProtocolVersion))) << e;
  EXPECT_TRUE(has(e, "rebuild ipcheck")) << e;
  // Another version may have other fields: the version is judged before the layout.
  const std::string other_layout = decode_error<msg::Hello>(packet(MsgType::hello, {next}));
  EXPECT_TRUE(has(other_layout, "protocol version " + next)) << other_layout;
  // An ipcheck from before versions said name, pid and mark.
  const std::string old = decode_error<msg::Hello>(packet(MsgType::hello, {"producer", "42", "0x1"}));
  EXPECT_TRUE(has(old, "names no protocol version (its first field is 'producer')")) << old;
  EXPECT_TRUE(has(old, "rebuild ipcheck")) << old;
}

TEST(Messages, DocReaderNamesTheMessageAndTheMember) {
  const msg::Data d{"finding", R"({"exec": "7", "hex": "0a1", "names": ["a", 2]})", {}};
  const msg::DocReader r(d);
  auto error = [](auto&& read) {
    try {
      read();
    } catch (const ChannelError& e) {
      return std::string(e.what());
    }
    ADD_FAILURE() << "no error";
    return std::string();
  };
  const std::string wrong = error([&] { r.count("exec"); });
  EXPECT_TRUE(has(wrong, "data message 'finding': member 'exec' is '\"7\"': not an unsigned integer")) << wrong;
  EXPECT_TRUE(has(error([&] { r.text("verdict"); }), "member 'verdict' is missing"));
  EXPECT_TRUE(has(error([&] { r.bytes("hex"); }), "an odd number of hex digits"));
  EXPECT_TRUE(has(error([&] { r.texts("names"); }), "not an array of strings"));
  const std::string not_json = error([] { (void)msg::DocReader(msg::Data{"ready", "{", {}}); });
  EXPECT_TRUE(has(not_json, "data message 'ready': the document '{' is not JSON")) << not_json;
  const std::vector<std::byte> raw = {std::byte{0x00}, std::byte{0xab}, std::byte{0x7f}};
  EXPECT_EQ(msg::hex(raw), "00ab7f");
  EXPECT_EQ(msg::DocReader("test", json{{"hex", msg::hex(raw)}}).bytes("hex"), raw);
}

}  // namespace
}  // namespace ipcheck::messages_test
