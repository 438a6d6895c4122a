// The campaign's messages (fuzz/src/campaign_messages.hpp): each survives a trip over a real
// channel, inputs relative to the worker's context, and a bad one is a ChannelError naming
// the message and the member; a fuzz-role of another protocol version stops the campaign.
#include <fcntl.h>
#include <sys/stat.h>

#include <gtest/gtest.h>

#include "../src/campaign_messages.hpp"
#include "ipcheck/fuzz/campaign.hpp"
#include "ipcheck/fuzz/layout.hpp"

namespace ipcheck::fuzz {
namespace {

using nlohmann::json;

Input input(std::uint16_t base, std::int16_t descriptor, std::uint8_t seed) {
  Input in;
  for (std::size_t i = 0; i < 64; ++i) in.bytes[i] = static_cast<std::byte>(seed + i);
  in.length = 64;
  in.base = base;
  in.descriptor = descriptor;
  return in;
}

// A worker's context: a producer's export with its descriptor, the worker's own without one.
MutatorContext context() {
  MutatorContext ctx;
  ctx.layout = &layout_for("ipcref/1", 64);
  ctx.descriptors = true;
  ctx.page_size = 4096;
  ctx.bases = {input(0, 0, 1), input(1, kNoDescriptor, 100)};
  ctx.base_names = {"producer.export[0]", "worker.export[0]"};
  ctx.values = {{"producer.pid", FieldRole::pid, 4242}, {"worker.page_fd", FieldRole::fd, 9}};
  return ctx;
}

void expect_same(const Input& a, const Input& b) {
  EXPECT_EQ(a.bytes, b.bytes);
  EXPECT_EQ(a.length, b.length);
  EXPECT_EQ(a.base, b.base);
  EXPECT_EQ(a.descriptor, b.descriptor);
  EXPECT_EQ(a.map_offset, b.map_offset);
  EXPECT_EQ(a.map_size, b.map_size);
}

// Sends `m` over a fresh channel and decodes what arrives with the receiver's copy of `ctx`.
wire::Any round_trip(Message m, const MutatorContext* ctx) {
  auto [a, b] = make_channel_pair();
  Channel x(std::move(a)), y(std::move(b));
  EXPECT_TRUE(x.send(m));
  auto got = y.receive(1000);
  EXPECT_TRUE(got.has_value());
  if (!got) return wire::Any{};
  return wire::decode(*got, ctx);
}

std::string decode_error(Message m, const MutatorContext* ctx) {
  try {
    wire::decode(m, ctx);
  } catch (const ChannelError& e) {
    return e.what();
  }
  ADD_FAILURE() << "decoding did not throw";
  return "";
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(CampaignMessages, SetUpMessagesRoundTrip) {
  const json record = {{"setup", "ipcheck.fuzz-setup/1"}, {"exports", json::array()}};
  EXPECT_EQ(std::get<wire::Setup>(round_trip(wire::encode(wire::Setup{record}), nullptr)).record, record);

  const MutatorContext ctx = context();
  const auto ready = std::get<wire::Ready>(round_trip(wire::encode(wire::Ready{ctx, 77, {"calibrated"}}), nullptr));
  EXPECT_EQ(ready.pid, 77);
  EXPECT_EQ(ready.calibration, std::vector<std::string>{"calibrated"});
  EXPECT_EQ(ready.context.layout, ctx.layout);
  EXPECT_EQ(ready.context.base_names, ctx.base_names);
  ASSERT_EQ(ready.context.bases.size(), 2u);
  EXPECT_EQ(ready.context.bases[1].descriptor, kNoDescriptor);
  EXPECT_EQ(ready.context.values.size(), 2u);

  const auto error = std::get<wire::Error>(round_trip(wire::encode(wire::Error{"init", "init: no device", "device_lost"}), nullptr));
  EXPECT_EQ(error.stage, "init");
  EXPECT_EQ(error.what, "init: no device");
  EXPECT_EQ(error.errc, "device_lost");
}

TEST(CampaignMessages, GoCarriesTheWorkerPage) {
  unique_fd page(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  ASSERT_TRUE(page);
  auto go = std::get<wire::Go>(round_trip(wire::encode(wire::Go{true, 11, 256, 1000, {{"pid", 64}}, CarriedFd::lend(page.get())}), nullptr));
  EXPECT_TRUE(go.replay);
  EXPECT_EQ(go.seed, 11u);
  EXPECT_EQ(go.first_exec, 256u);
  EXPECT_EQ(go.quota, 1000u);
  ASSERT_EQ(go.schedule.size(), 1u);
  EXPECT_EQ(go.schedule[0].cls, "pid");
  EXPECT_EQ(go.schedule[0].keep_one_in, 64u);
  ASSERT_TRUE(go.page.owned());
  struct stat sent{}, received{};
  ASSERT_EQ(::fstat(page.get(), &sent), 0);
  ASSERT_EQ(::fstat(go.page.get(), &received), 0);
  EXPECT_EQ(sent.st_ino, received.st_ino);
  // Without its page a go cannot be taken.
  Message bare = wire::encode(wire::Go{false, 1, 0, 0, {}, {}});
  EXPECT_TRUE(has(decode_error(std::move(bare), nullptr), "'go' came without its descriptor"));
}

TEST(CampaignMessages, ScheduleCarriesEachClassesRate) {
  const auto s = std::get<wire::Schedule>(round_trip(wire::encode(wire::Schedule{{{"offset", 32}, {"pid+size", 4096}}}), nullptr));
  ASSERT_EQ(s.classes.size(), 2u);
  EXPECT_EQ(s.classes[0].cls, "offset");
  EXPECT_EQ(s.classes[0].keep_one_in, 32u);
  EXPECT_EQ(s.classes[1].cls, "pid+size");
  EXPECT_EQ(s.classes[1].keep_one_in, 4096u);
  // A rate of 0 would divide by zero in the worker's draw: refused, named.
  Message zero = wire::encode(wire::Schedule{{{"offset", 0}}});
  EXPECT_TRUE(has(decode_error(std::move(zero), nullptr), "keep_one_in is 0"));
}

TEST(CampaignMessages, InputsTravelRelativeToTheWorkersContext) {
  const MutatorContext ctx = context();
  Input in = input(1, kNoDescriptor, 7);
  in.map_offset = 4096;
  in.map_size = 8192;
  const json outcome = {{"errc", "success"}};
  const auto finding = std::get<wire::Finding>(
      round_trip(wire::encode(wire::Finding{42, Verdict::confused_deputy, "mapped a decoy", in, outcome}, ctx), &ctx));
  EXPECT_EQ(finding.exec, 42u);
  EXPECT_EQ(finding.verdict, Verdict::confused_deputy);
  EXPECT_EQ(finding.detail, "mapped a decoy");
  expect_same(finding.input, in);
  EXPECT_EQ(finding.outcome, outcome);

  const auto corpus = std::get<wire::Corpus>(round_trip(wire::encode(wire::Corpus{in, Verdict::rejected, outcome}, ctx), &ctx));
  expect_same(corpus.input, in);
  EXPECT_EQ(corpus.verdict, Verdict::rejected);

  const auto exec = std::get<wire::Exec>(round_trip(wire::encode(wire::Exec{3, in}, ctx), &ctx));
  EXPECT_EQ(exec.id, 3);
  expect_same(exec.input, in);

  // A finding before the sender's context is known cannot be read.
  const std::string e = decode_error(wire::encode(wire::Finding{1, Verdict::crash, "", in, json::object()}, ctx), nullptr);
  EXPECT_TRUE(has(e, "'finding' carries an input, but its sender's context is not known yet")) << e;
}

TEST(CampaignMessages, ReportsAndOrdersRoundTrip) {
  const auto verdict = std::get<wire::ExecVerdict>(
      round_trip(wire::encode(wire::ExecVerdict{3, Verdict::hang, "slow", {{"exit", "killed"}}}), nullptr));
  EXPECT_EQ(verdict.id, 3);
  EXPECT_EQ(verdict.verdict, Verdict::hang);
  EXPECT_EQ(verdict.detail, "slow");
  EXPECT_EQ(verdict.outcome, (json{{"exit", "killed"}}));

  const auto final = std::get<wire::Final>(round_trip(wire::encode(wire::Final{{LeakItem{"fd", "/dev/null"}}, 900}), nullptr));
  EXPECT_EQ(final.executions, 900u);
  ASSERT_EQ(final.leaks.size(), 1u);
  EXPECT_EQ(final.leaks[0].kind, "fd");
  EXPECT_EQ(final.leaks[0].item, "/dev/null");
  EXPECT_EQ(final.fds, 1u);
  EXPECT_EQ(final.mappings, 0u);

  // A runtime that keeps every opened mapping (UMF's cache) leaves thousands: the message
  // fits one packet, lists the first few of each kind and counts them all.
  wire::Final many;
  for (int i = 0; i < 20000; ++i)
    many.leaks.push_back({"mapping", "7f0000000000-7f0000010000 rw-s /memfd:ipcref-memory:" + std::to_string(i)});
  many.leaks.push_back({"fd", "/memfd:ipcref-control"});
  const auto big = std::get<wire::Final>(round_trip(wire::encode(many), nullptr));
  EXPECT_EQ(big.mappings, 20000u);
  EXPECT_EQ(big.fds, 1u);
  EXPECT_EQ(big.leaks.size(), wire::Final::kFinalItemsPerKind + 1);
  EXPECT_EQ(big.leaks.back().item, "/memfd:ipcref-control");

  EXPECT_EQ(std::get<wire::Retire>(round_trip(wire::encode(wire::Retire{513}), nullptr)).next_exec, 513u);
  // Schedule: ScheduleCarriesEachClassesRate.
}

TEST(CampaignMessages, ABadMessageNamesItsKeyAndMember) {
  const MutatorContext ctx = context();
  auto data = [](const char* key, const std::string& doc) { return msg::encode(msg::Data{key, doc, {}}); };
  const std::string unknown = decode_error(data("gossip", "{}"), &ctx);
  EXPECT_TRUE(has(unknown, "data message 'gossip' is none of the campaign's messages")) << unknown;
  const std::string verdict = decode_error(data("verdict", R"({"id": 1, "verdict": "fine", "detail": "", "outcome": {}})"), &ctx);
  EXPECT_TRUE(has(verdict, "data message 'verdict': member 'verdict' is '\"fine\"': no verdict of this ipcheck")) << verdict;
  const std::string retire = decode_error(data("retire", R"({"next_exec": -1})"), &ctx);
  EXPECT_TRUE(has(retire, "member 'next_exec' is '-1': not an unsigned integer")) << retire;
  const std::string context_member = decode_error(data("ready", R"({"context": {}, "pid": 1, "calibration": []})"), &ctx);
  EXPECT_TRUE(has(context_member, "data message 'ready': member 'context' is '{}'")) << context_member;
  const std::string input = decode_error(data("exec", R"({"id": 1, "input": {"hex": "00"}})"), &ctx);
  EXPECT_TRUE(has(input, "data message 'exec': member 'input'")) << input;
  const std::string type = decode_error(msg::encode(msg::Barrier{"met"}), &ctx);
  EXPECT_TRUE(has(type, "expected a data message, got a barrier message")) << type;
}

// A fuzz-role of another ipcheck build says a hello of another protocol version: the campaign
// stops at once, naming both versions, rather than misreading it.
TEST(CampaignMessages, AFuzzRoleOfAnotherVersionIsRefused) {
  CampaignOptions o;
  o.adapter = "ref";
  o.runs = 10;
  o.progress = false;
  o.executable = IPCHECK_OTHER_VERSION_EXE;
  const reports::Results r = run_campaign(o, ::testing::TempDir() + "campaign-other-version");
  EXPECT_EQ(r.fuzz.value("status", ""), "aborted") << r.fuzz.dump();
  const std::string reason = r.fuzz.value("reason", "");
  EXPECT_TRUE(has(reason, "the producer (" + std::string(IPCHECK_OTHER_VERSION_EXE) + " fuzz-role) was refused")) << reason;
  EXPECT_TRUE(has(reason, "the role speaks protocol version " + std::to_string(msg::kProtocolVersion + 1))) << reason;
  EXPECT_TRUE(has(reason, "rebuild ipcheck")) << reason;
}

}  // namespace
}  // namespace ipcheck::fuzz
