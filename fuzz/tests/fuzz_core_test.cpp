// The pieces a campaign trusts: layouts, canaries, mutators, the oracle's judgement of a
// mapping, and reproducers that survive into another campaign.
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <set>

#include <gtest/gtest.h>

#include "ipcheck/fuzz/canary.hpp"
#include "ipcheck/fuzz/layout.hpp"
#include "ipcheck/fuzz/mutator.hpp"
#include "ipcheck/fuzz/oracle.hpp"
#include "ipcheck/fuzz/symbolic.hpp"
#include "ipcref/record.hpp"

namespace ipcheck::fuzz {
namespace {

ipcref::record::fields record_of(std::uint32_t pid, std::int32_t fd, std::uint64_t token, std::uint64_t size,
                                 std::uint64_t offset = 0, std::uint32_t slot = 0) {
  ipcref::record::fields f;
  f.pid = pid;
  f.fd = fd;
  f.guard = 0x1234567890ull + pid;
  f.token = token;
  f.size = size;
  f.offset = offset;
  f.slot = slot;
  return f;
}

Input input_of(const ipcref::record::bytes& b, std::uint16_t base, std::int16_t descriptor = kNoDescriptor) {
  Input in;
  std::memcpy(in.bytes.data(), b.data(), b.size());
  in.length = static_cast<std::uint16_t>(b.size());
  in.base = base;
  in.descriptor = descriptor;
  return in;
}

// A campaign's context: two exports of one producer, its decoy's descriptor, the consumer.
MutatorContext campaign(std::uint32_t producer, std::uint64_t token0, std::uint64_t token1, std::int32_t decoy_fd) {
  MutatorContext ctx;
  ctx.layout = &layout_for("ipcref/1", 64);
  ctx.bases.push_back(input_of(ipcref::record::encode(record_of(producer, 5, token0, 4096)), 0));
  ctx.bases.push_back(input_of(ipcref::record::encode(record_of(producer, 7, token1, 12411)), 1));
  ctx.base_names = {"producer.export[0]", "producer.export[1]"};
  ctx.values = {{"producer.pid", FieldRole::pid, producer},
                {"producer.alloc[1].fd", FieldRole::fd, static_cast<std::uint64_t>(decoy_fd)},
                {"worker.pid", FieldRole::pid, producer + 100}};
  return ctx;
}

TEST(Layout, IpcrefLayoutIsTheRecordsOwn) {
  const HandleLayout& l = layout_for("ipcref/1", 64);
  EXPECT_EQ(l.knowledge, "exact");
  EXPECT_EQ(l.size, ipcref::record::size);
  ASSERT_EQ(l.fields.size(), ipcref::record::layout().size());
  for (std::size_t i = 0; i < l.fields.size(); ++i) {
    EXPECT_EQ(l.fields[i].name, ipcref::record::layout()[i].name);
    EXPECT_EQ(l.fields[i].offset, ipcref::record::layout()[i].offset);
    EXPECT_EQ(l.fields[i].width, ipcref::record::layout()[i].width);
  }
  EXPECT_EQ(l.fields[static_cast<std::size_t>(l.find(FieldRole::token))].name, "token");
}

TEST(Layout, ResealMakesAChangedRecordPassTheFramingCheck) {
  const HandleLayout& l = layout_for("ipcref/1", 64);
  auto b = ipcref::record::encode(record_of(100, 5, 77, 4096));
  l.set(b, l.find(FieldRole::fd), 9);
  EXPECT_FALSE(l.checksum_valid(b));
  EXPECT_TRUE(ipcref::record::check(b, ipcref::record::kind::memory, "t").has_value());
  l.reseal(b);
  EXPECT_TRUE(l.checksum_valid(b));
  EXPECT_FALSE(ipcref::record::check(b, ipcref::record::kind::memory, "t").has_value());
  EXPECT_EQ(ipcref::record::decode(b).fd, 9);
}

TEST(Layout, FdFirstConventionKeepsTheRecordChecksumWithTheMagicImplied) {
  const HandleLayout& l = layout_for("ze-ipcheck-fd/1", 64);
  auto rec = ipcref::record::encode(record_of(100, 5, 77, 4096));
  auto h = rec;
  store_le(h.data(), 4, 42);  // the importer's descriptor number replaces the magic
  EXPECT_TRUE(l.checksum_valid(h));
  l.set(h, l.find("size"), 8192);
  l.reseal(h);
  store_le(h.data(), 4, ipcref::record::magic);
  EXPECT_FALSE(ipcref::record::check(h, ipcref::record::kind::memory, "t").has_value());
}

TEST(Layout, UnknownNamesAreOpaqueChunksOfTheHandlesSize) {
  const HandleLayout& l = layout_for("cuda/whatever", 64);
  EXPECT_EQ(l.knowledge, "opaque");
  EXPECT_EQ(l.name, "opaque/64");
  EXPECT_EQ(l.fields.size(), 8u);
  EXPECT_FALSE(l.has_checksum());
  EXPECT_EQ(&layout_for("something/else", 64), &l);
  EXPECT_EQ(layout_for("odd", 20).fields.back().width, 4u);
  EXPECT_THROW(layout_for("huge", 1000), std::invalid_argument);
  EXPECT_EQ(layout_for("ze-intel-opaque/1", 64).fields[static_cast<std::size_t>(layout_for("ze-intel-opaque/1", 64).find(FieldRole::pid))].offset, 16u);
}

TEST(Canary, NamesAllocationAndOffset) {
  std::vector<CanaryAlloc> table = {{"a", 0x1000, 4096, false, {{0, 4096}}, {}},
                                    {"b", 0x7777000, 65536, true, {}, {}}};
  std::vector<std::byte> b(65536);
  fill_canary(table[1].salt, 0, b);
  EXPECT_EQ(canary_mismatch(table[1].salt, 0, b), static_cast<std::size_t>(-1));
  // Read from 4160 bytes in, at an address with the same alignment.
  const auto id = identify(table, 0x10000 + 4160, std::span(b).subspan(4160, 64));
  ASSERT_TRUE(id);
  EXPECT_EQ(id->alloc, 1u);
  EXPECT_EQ(id->offset, 4160u);
  const auto odd = identify(table, 0x10000 + 4161, std::span(b).subspan(4161, 64));
  ASSERT_TRUE(odd);
  EXPECT_EQ(odd->offset, 4161u);
  b[5000] ^= std::byte{1};
  EXPECT_EQ(canary_mismatch(table[1].salt, 0, b), 5000u);
  std::vector<std::byte> zeros(64);
  EXPECT_FALSE(identify(table, 0x10000, zeros));
}

// Reads local memory: what an adapter's read does for host mappings.
class LocalReader final : public MemoryReader {
 public:
  bool read(std::uint64_t address, std::span<std::byte> out) override {
    if (!host_mapped(address) || !host_mapped(address + out.size() - 1)) return false;
    std::memcpy(out.data(), reinterpret_cast<const void*>(address), out.size());
    return true;
  }
};

TEST(Oracle, JudgesWhatAMappingHolds) {
  const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  // Four usable pages and a hole after them.
  void* m = ::mmap(nullptr, 5 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(m, MAP_FAILED);
  auto* base = static_cast<std::byte*>(m);
  ::munmap(base + 4 * page, page);
  std::vector<CanaryAlloc> table = {{"exported", 0xabc000, 2 * page, false, {{0, 2 * page}}, {}},
                                    {"decoy", 0xdef000, page, true, {}, {}},
                                    {"revoked", 0x55000, page, false, {}, {{0, page}}}};
  LocalReader reader;
  std::vector<std::byte> scratch;
  const auto at = [&](std::size_t p) { return reinterpret_cast<std::uint64_t>(base + p * page); };

  fill_canary(table[0].salt, 0, {base, 2 * page});
  EXPECT_EQ(judge_mapping(table, at(0), 2 * page, reader, scratch).verdict, Verdict::mapped);
  EXPECT_EQ(judge_mapping(table, at(0), std::nullopt, reader, scratch).verdict, Verdict::mapped);
  EXPECT_EQ(judge_mapping(table, at(0), page, reader, scratch).verdict, Verdict::wrong_size);
  EXPECT_EQ(judge_mapping(table, at(0) + 8, std::nullopt, reader, scratch).verdict, Verdict::wrong_offset);

  fill_canary(table[1].salt, 0, {base + 2 * page, page});
  const Judgement d = judge_mapping(table, at(2), std::nullopt, reader, scratch);
  EXPECT_EQ(d.verdict, Verdict::confused_deputy);
  EXPECT_NE(d.detail.find("decoy"), std::string::npos) << d.detail;

  fill_canary(table[2].salt, 0, {base + 2 * page, page});
  EXPECT_EQ(judge_mapping(table, at(2), std::nullopt, reader, scratch).verdict, Verdict::stale_export);

  std::memset(base + 2 * page, 0, page);
  EXPECT_EQ(judge_mapping(table, at(2), std::nullopt, reader, scratch).verdict, Verdict::unknown_mapping);

  // The export's second page is not there: shorter than the export.
  fill_canary(table[0].salt, 0, {base + 3 * page, page});
  ::munmap(base, 3 * page);
  EXPECT_EQ(judge_mapping(table, at(3), std::nullopt, reader, scratch).verdict, Verdict::wrong_size);
  EXPECT_EQ(judge_mapping(table, at(0), std::nullopt, reader, scratch).verdict, Verdict::unreadable_mapping);
  ::munmap(base + 3 * page, page);
  EXPECT_FALSE(host_mapped(at(3)));
}

// Counts reads, and fails those longer than `readable` (a mapping shorter than it claims).
class CountingReader final : public MemoryReader {
 public:
  explicit CountingReader(std::size_t readable) : readable_(readable) {}
  bool read(std::uint64_t address, std::span<std::byte> out) override {
    ++reads;
    if (out.size() > readable_) return false;
    std::memcpy(out.data(), reinterpret_cast<const void*>(address), out.size());
    return true;
  }
  int reads = 0;

 private:
  std::size_t readable_;
};

TEST(Oracle, AStatedSizeIsReadOnceAndNeverChangesTheVerdict) {
  constexpr std::size_t kSize = 6000;
  std::vector<std::byte> mem(kSize);
  std::vector<CanaryAlloc> table = {{"exported", 0xabc000, kSize, false, {{0, kSize}}, {}},
                                    {"small", 0x123000, 64, false, {{0, 64}}, {}}};
  fill_canary(table[0].salt, 0, mem);
  const auto at = reinterpret_cast<std::uint64_t>(mem.data());
  std::vector<std::byte> scratch;

  // A correct mapping with its size stated: one read; without: the head, then the whole.
  CountingReader whole(kSize);
  EXPECT_EQ(judge_mapping(table, at, kSize, whole, scratch).verdict, Verdict::mapped);
  EXPECT_EQ(whole.reads, 1);
  whole.reads = 0;
  EXPECT_EQ(judge_mapping(table, at, std::nullopt, whole, scratch).verdict, Verdict::mapped);
  EXPECT_EQ(whole.reads, 2);

  // Only the first 100 bytes readable: with or without the stated size, the same verdict.
  CountingReader part(100);
  const Judgement stated = judge_mapping(table, at, kSize, part, scratch);
  const Judgement unstated = judge_mapping(table, at, std::nullopt, part, scratch);
  EXPECT_EQ(stated.verdict, Verdict::wrong_size);
  EXPECT_EQ(stated.verdict, unstated.verdict);
  EXPECT_EQ(stated.detail, unstated.detail);

  // A stated size above every export, or below the head, is not read whole.
  whole.reads = 0;
  EXPECT_EQ(judge_mapping(table, at, kSize + 1, whole, scratch).verdict, Verdict::wrong_size);
  EXPECT_EQ(judge_mapping(table, at, 16, whole, scratch).verdict, Verdict::wrong_size);
  EXPECT_EQ(whole.reads, 2);  // the head of each
}

TEST(Oracle, LowestFreeDescriptorRisesWithALeak) {
  const int before = lowest_free_fd();
  const int leaked = ::dup(0);
  EXPECT_EQ(leaked, before);
  EXPECT_GT(lowest_free_fd(), before);
  ::close(leaked);
  EXPECT_EQ(lowest_free_fd(), before);
}

TEST(Oracle, VerdictNamesRoundTrip) {
  for (int i = 0; i < kVerdictCount; ++i) {
    const auto v = static_cast<Verdict>(i);
    EXPECT_EQ(parse_verdict(verdict_name(v)), v);
  }
  EXPECT_FALSE(is_finding(Verdict::rejected));
  EXPECT_TRUE(is_finding(Verdict::confused_deputy));
  EXPECT_STREQ(verdict_clause(Verdict::confused_deputy), "rb.open.confused_deputy");
  // --target physical: the mapping's place and extent are vm_map's.
  EXPECT_STREQ(verdict_clause(Verdict::wrong_offset), "rb.open.garbage");
  EXPECT_STREQ(verdict_clause(Verdict::wrong_offset, "physical"), "sycl.phys.map.offset");
  EXPECT_STREQ(verdict_clause(Verdict::map_refused, "physical"), "sycl.phys.map.offset");
  EXPECT_STREQ(verdict_clause(Verdict::confused_deputy, "physical"), "rb.open.confused_deputy");
  EXPECT_STREQ(verdict_clause(Verdict::corrupt_mapping, "event"), "ur.event.bidirectional");
  EXPECT_STREQ(verdict_clause(Verdict::close_failed, "event"), "ur.event.release");
  EXPECT_STREQ(verdict_clause(Verdict::stale_export, "event"), "rb.put.revokes");
}

TEST(Mutator, SameSeedSameInputs) {
  const MutatorContext ctx = campaign(100, 77, 78, 6);
  Mutator m(ctx);
  for (std::uint64_t i = 0; i < 2000; ++i) {
    Rng a(derive_seed(9, i)), b(derive_seed(9, i));
    Input x, y;
    m.mutate(a, ctx.bases[i % 2], x);
    m.mutate(b, ctx.bases[i % 2], y);
    ASSERT_EQ(x.length, y.length);
    ASSERT_EQ(std::memcmp(x.bytes.data(), y.bytes.data(), kMaxInput), 0);
    ASSERT_EQ(x.descriptor, y.descriptor);
  }
}

TEST(Mutator, CoversEveryFieldBothChecksumStatesAndLengths) {
  const MutatorContext ctx = campaign(100, 77, 78, 6);
  const HandleLayout& l = *ctx.layout;
  Mutator m(ctx);
  std::set<std::string> changed;
  int resealed = 0, stale = 0, shorter = 0, longer = 0, unchanged = 0, distinct_seeds = 0;
  std::set<std::string> seen;
  for (std::uint64_t i = 0; i < 20000; ++i) {
    Rng rng(derive_seed(1, i));
    Input in;
    const MutationInfo info = m.mutate(rng, ctx.bases[0], in);
    ASSERT_LE(in.length, kMaxInput);
    seen.insert(std::string(reinterpret_cast<const char*>(in.bytes.data()), in.length));
    if (info.ops == 0) ++unchanged;
    if (in.length < l.size) ++shorter;
    if (in.length > l.size) ++longer;
    if (info.resealed) {
      ++resealed;
      EXPECT_TRUE(l.checksum_valid(in.bytes));
    } else if (info.ops && !l.checksum_valid(in.bytes)) {
      ++stale;
    }
    for (std::size_t f = 0; f < l.fields.size(); ++f)
      if (l.get(in.bytes, static_cast<int>(f)) != l.get(ctx.bases[0].bytes, static_cast<int>(f))) changed.insert(l.fields[f].name);
  }
  distinct_seeds = static_cast<int>(seen.size());
  EXPECT_EQ(changed.size(), l.fields.size()) << "every field gets mutated";
  EXPECT_GT(resealed, 5000);
  EXPECT_GT(stale, 1000);
  EXPECT_GT(shorter, 100);
  EXPECT_GT(longer, 100);
  EXPECT_GT(unchanged, 100);
  EXPECT_GT(distinct_seeds, 5000);
}

TEST(Mutator, FieldAwareSwapsUseLiveValues) {
  const MutatorContext ctx = campaign(100, 77, 78, 6);
  const HandleLayout& l = *ctx.layout;
  Mutator m(ctx);
  bool decoy_fd = false, worker_pid = false, other_token = false;
  for (std::uint64_t i = 0; i < 5000 && !(decoy_fd && worker_pid && other_token); ++i) {
    Rng rng(derive_seed(2, i));
    Input in = ctx.bases[0];
    bool touched = false;
    m.field_op(rng, in, l.find(FieldRole::fd), touched);
    decoy_fd = decoy_fd || l.get(in.bytes, l.find(FieldRole::fd)) == 6;
    in = ctx.bases[0];
    m.field_op(rng, in, l.find(FieldRole::pid), touched);
    worker_pid = worker_pid || l.get(in.bytes, l.find(FieldRole::pid)) == 200;
    in = ctx.bases[0];
    m.field_op(rng, in, l.find(FieldRole::token), touched);
    other_token = other_token || l.get(in.bytes, l.find(FieldRole::token)) == 78;
  }
  EXPECT_TRUE(decoy_fd) << "fd takes another allocation's descriptor";
  EXPECT_TRUE(worker_pid) << "pid takes the importer's own pid";
  EXPECT_TRUE(other_token) << "token is taken from another export";
}

TEST(Mutator, OpaqueLayoutsAreMutatedBlind) {
  MutatorContext ctx;
  ctx.layout = &layout_for("opaque-for-test", 64);
  Input base;
  base.length = 64;
  for (int i = 0; i < 64; ++i) base.bytes[static_cast<std::size_t>(i)] = static_cast<std::byte>(i);
  ctx.bases = {base};
  ctx.base_names = {"producer.export[0]"};
  Mutator m(ctx);
  int differ = 0;
  for (std::uint64_t i = 0; i < 1000; ++i) {
    Rng rng(derive_seed(3, i));
    Input in;
    const MutationInfo info = m.mutate(rng, base, in);
    EXPECT_FALSE(info.field_aware);
    EXPECT_FALSE(info.resealed);
    differ += in.length != 64 || std::memcmp(in.bytes.data(), base.bytes.data(), 64) != 0;
  }
  EXPECT_GT(differ, 900);
}


// --target physical: every input carries a map range, drawn around the object's edges; the
// memory target's inputs carry none.
TEST(Mutator, PhysicalInputsCarryMapRangesAroundTheObjectsEdges) {
  MutatorContext ctx = campaign(100, 77, 78, 6);
  {
    Mutator m(ctx);
    for (std::uint64_t i = 0; i < 200; ++i) {
      Rng rng(derive_seed(4, i));
      Input in;
      m.mutate(rng, ctx.bases[i % 2], in);
      ASSERT_EQ(in.map_offset, 0u);
      ASSERT_EQ(in.map_size, 0u);
    }
  }
  const std::uint64_t g = 4096, s = 4 * g;
  ctx.map_granularity = g;
  ctx.map_sizes = {s, 0};  // base 1: the layout did not say; ranges are drawn against one unit
  Mutator m(ctx);
  int whole = 0, inside_offset = 0, past_end = 0, unaligned = 0, legal = 0;
  for (std::uint64_t i = 0; i < 4000; ++i) {
    Rng rng(derive_seed(5, i));
    Input in;
    m.mutate(rng, ctx.bases[0], in);
    ASSERT_GT(in.map_offset + in.map_size, 0u);
    whole += in.map_offset == 0 && in.map_size == s;
    const bool granular = in.map_offset % g == 0 && in.map_size % g == 0;
    const bool inside = in.map_offset <= s && in.map_size <= s - std::min(s, in.map_offset);
    inside_offset += granular && inside && in.map_offset > 0 && in.map_size > 0;
    past_end += in.map_offset + in.map_size > s;
    unaligned += !granular;
    legal += granular && inside && in.map_size > 0;
  }
  EXPECT_GT(whole, 500);
  EXPECT_GT(inside_offset, 200);
  EXPECT_GT(past_end, 200);
  EXPECT_GT(unaligned, 200);
  EXPECT_GT(legal, 1000);
  for (std::uint64_t i = 0; i < 500; ++i) {
    Rng rng(derive_seed(6, i));
    Input in;
    m.mutate(rng, ctx.bases[1], in);
    ASSERT_LE(in.map_offset, 2 * g);  // s = g when the size is unknown
  }
}

// The map range travels with a reproducer and is kept by minimisation.
TEST(Symbolic, MapRangeRoundTripsAndSurvivesSimplification) {
  const MutatorContext ctx = campaign(100, 77, 78, 6);
  const HandleLayout& l = *ctx.layout;
  Input in = ctx.bases[0];
  l.set(in.bytes, l.find(FieldRole::token), 78);
  in.map_offset = 8192;
  in.map_size = 4096;
  const Symbolic s = symbolize(ctx, in);
  EXPECT_EQ(s.map_offset, 8192u);
  EXPECT_EQ(s.map_size, 4096u);
  EXPECT_NE(describe(s, l).find("mapped at offset 8192, 4096 bytes"), std::string::npos) << describe(s, l);
  const nlohmann::json j = to_json(s);
  EXPECT_EQ(j.at("map").at("offset"), 8192u);
  const auto back = resolve(ctx, symbolic_from_json(j), nullptr);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->map_offset, 8192u);
  EXPECT_EQ(back->map_size, 4096u);
  for (const Symbolic& t : simplifications(s, ctx)) {
    EXPECT_EQ(t.map_offset, 8192u);
    EXPECT_EQ(t.map_size, 4096u);
  }
  EXPECT_EQ(restrict_to(s, {}, ctx).map_offset, 8192u);
  // The memory target's reproducers have no "map".
  EXPECT_FALSE(to_json(symbolize(ctx, ctx.bases[1])).contains("map"));
  nlohmann::json bad = j;
  bad["map"]["size"] = -1;
  EXPECT_THROW(symbolic_from_json(bad), std::invalid_argument);
  bad["map"] = 5;
  EXPECT_THROW(symbolic_from_json(bad), std::invalid_argument);
}
TEST(Symbolic, ReplaysAgainstANewCampaignsLiveValues) {
  // Found: export[0] with the decoy's descriptor and export[1]'s token, resealed.
  const MutatorContext old = campaign(100, 77, 78, 6);
  const HandleLayout& l = *old.layout;
  Input found = old.bases[0];
  l.set(found.bytes, l.find(FieldRole::fd), 6);
  l.set(found.bytes, l.find(FieldRole::token), 78);
  l.reseal(found.bytes);
  const Symbolic s = symbolize(old, found);
  EXPECT_EQ(s.base, "producer.export[0]");
  EXPECT_TRUE(s.resealed);
  ASSERT_EQ(s.changes.size(), 2u);
  EXPECT_EQ(s.changes[0].source, "producer.alloc[1].fd");
  EXPECT_EQ(s.changes[1].source, "producer.export[1].token");
  EXPECT_EQ(mutated_fields(s, old), (std::vector<std::string>{"fd", "token"}));
  EXPECT_NE(describe(s, l).find("fd := producer.alloc[1].fd"), std::string::npos) << describe(s, l);

  // Through JSON (a reproducer file) into a campaign where every live value differs.
  const Symbolic back = symbolic_from_json(to_json(s));
  const MutatorContext now = campaign(555, 1001, 1002, 9);
  std::string why;
  const auto in = resolve(now, back, &why);
  ASSERT_TRUE(in) << why;
  const auto f = ipcref::record::decode(in->data());
  EXPECT_EQ(f.pid, 555u);
  EXPECT_EQ(f.fd, 9);
  EXPECT_EQ(f.token, 1002u);
  EXPECT_EQ(f.size, 4096u);
  EXPECT_TRUE(l.checksum_valid(in->bytes));
}

TEST(Symbolic, LiteralsStaleChecksumsLengthsAndDescriptors) {
  const MutatorContext ctx = campaign(100, 77, 78, 6);
  const HandleLayout& l = *ctx.layout;
  Input in = ctx.bases[1];
  l.set(in.bytes, l.find(FieldRole::size), 3);
  in.length = 70;
  in.bytes[64] = std::byte{0xaa};
  in.descriptor = kForeignDescriptor;
  const Symbolic s = symbolize(ctx, in);
  EXPECT_FALSE(s.resealed);
  ASSERT_EQ(s.changes.size(), 1u);
  EXPECT_TRUE(s.changes[0].source.empty());
  EXPECT_EQ(s.tail.size(), 6u);
  EXPECT_EQ(mutated_fields(s, ctx), (std::vector<std::string>{"descriptor", "size", "tail"}));
  const auto back = resolve(ctx, symbolic_from_json(to_json(s)), nullptr);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->length, 70);
  EXPECT_EQ(std::memcmp(back->bytes.data(), in.bytes.data(), 70), 0);
  EXPECT_EQ(back->descriptor, kForeignDescriptor);

  // Each simplification drops one difference; restricting keeps only the named ones.
  EXPECT_EQ(simplifications(s, ctx).size(), 3u);
  const Symbolic only_size = restrict_to(s, {"size"}, ctx);
  EXPECT_EQ(mutated_fields(only_size, ctx), std::vector<std::string>{"size"});

  Symbolic missing = s;
  missing.base = "producer.export[9]";
  std::string why;
  EXPECT_FALSE(resolve(ctx, missing, &why));
  EXPECT_NE(why.find("producer.export[9]"), std::string::npos);
}

TEST(Symbolic, HexRoundTripAndErrors) {
  const std::vector<std::byte> b = {std::byte{0}, std::byte{0xab}, std::byte{0x7f}};
  EXPECT_EQ(to_hex(b), "00ab7f");
  EXPECT_EQ(from_hex("00AB7f"), b);
  EXPECT_THROW(from_hex("abc"), std::invalid_argument);
  EXPECT_THROW(from_hex("zz"), std::invalid_argument);
}

}  // namespace
}  // namespace ipcheck::fuzz

namespace ipcheck::fuzz {
// The schedule's input classes: the fields an input changed, named and read back.
TEST(Schedule, ChangedFieldsNameAndMaskRoundTrip) {
  MutatorContext ctx;
  ctx.layout = &layout_for("opaque/64", 64);
  Input base;
  base.length = 64;
  for (std::size_t i = 0; i < 64; ++i) base.bytes[i] = static_cast<std::byte>(i);
  ctx.bases.push_back(base);
  Input in = base;
  EXPECT_EQ(changed_fields(ctx, in), 0u);
  in.bytes[25] ^= std::byte{1};
  in.bytes[9] ^= std::byte{0x80};
  const std::uint64_t mask = changed_fields(ctx, in);
  EXPECT_EQ(mask, (1ull << 1) | (1ull << 3));
  EXPECT_EQ(changed_fields_name(*ctx.layout, mask), "bytes@8+bytes@24");
  EXPECT_EQ(changed_fields_mask(*ctx.layout, "bytes@8+bytes@24"), mask);
  in.length = 40;
  EXPECT_EQ(changed_fields(ctx, in), mask | kLengthShorter);
  EXPECT_EQ(changed_fields_name(*ctx.layout, mask | kLengthShorter), "bytes@8+bytes@24+length");
  EXPECT_EQ(changed_fields_mask(*ctx.layout, "tail+nosuchfield"), kLengthLonger);
}
}  // namespace ipcheck::fuzz
