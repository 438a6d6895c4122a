// Two processes: this test and an ipcref_peer it starts (fork + exec, channel over an
// inherited SOCK_SEQPACKET socket). Round trips both ways, events with a waiter blocked in
// the other process, physical memory, SCM_RIGHTS, and the RB clauses that need a second
// process (exporter gone, pid reuse, confused deputy, consumer crash).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <optional>
#include <set>
#include <system_error>
#include <vector>

#include "ipcref/ipcref.hpp"
#include "support/audit.hpp"
#include "support/checks.hpp"
#include "support/devices.hpp"
#include "support/owned.hpp"
#include "support/pattern.hpp"
#include "support/peer_process.hpp"

namespace {

using namespace ipcref;
using namespace ipcref_test;
using namespace std::chrono_literals;
namespace mem = ipcref::ipc::memory;
namespace phys = ipcref::ipc::physical_memory;
namespace ev = ipcref::ipc::event;
using steady = std::chrono::steady_clock;

constexpr std::uint64_t kNoMismatch = UINT64_MAX;

std::vector<std::byte> bytes_of(const peer_reply& r) { return {r.bytes().begin(), r.bytes().end()}; }

record::bytes record_of(std::span<const std::byte> data) {
  record::bytes b{};
  std::copy(data.begin(), data.end(), b.begin());
  return b;
}

struct CrossProcess : testing::Test {
  context ctx;
  device dev = ipc_device();
  std::size_t gran = physical_granularity();
};

TEST_F(CrossProcess, sycl_mem_roundtrip_peer_exports) {
  peer_process peer;
  // One page, an odd size, and 64 MiB; the pattern differs at every offset.
  for (std::size_t bytes : {std::size_t{4096}, std::size_t{12345}, std::size_t{64} << 20}) {
    SCOPED_TRACE(bytes);
    const std::uint64_t seed = 1000 + bytes, back = 2000 + bytes;
    const std::uint64_t ptr = peer.must(op::alloc, usm_device, bytes, seed).msg.a;
    const peer_reply h = peer.must(op::mem_get, ptr);
    opened_ptr o(mem::open(h.bytes(), ctx, dev), ctx);
    EXPECT_EQ(find_mismatch(o.get(), bytes, seed), SIZE_MAX);
    EXPECT_EQ(get_pointer_info(o.get(), ctx).size, bytes);
    // The producer sees the consumer's writes.
    fill_pattern(o.get(), bytes, back);
    EXPECT_EQ(peer.must(op::verify, ptr, bytes, back).msg.a, kNoMismatch);
    o.reset();
    peer.must(op::free, ptr);
  }
}

TEST_F(CrossProcess, sycl_mem_roundtrip_test_exports) {
  peer_process peer;
  for (std::size_t bytes : {std::size_t{4096}, std::size_t{12345}, std::size_t{64} << 20}) {
    SCOPED_TRACE(bytes);
    const std::uint64_t seed = 3000 + bytes, back = 4000 + bytes;
    usm_ptr a(malloc_device(bytes, dev, ctx), ctx);
    fill_pattern(a.get(), bytes, seed);
    handle h = mem::get(a.get(), ctx);
    const std::uint64_t there = peer.must(op::mem_open, 0, 0, 0, h.data()).msg.a;
    EXPECT_EQ(peer.must(op::verify, there, bytes, seed).msg.a, kNoMismatch);
    peer.must(op::fill, there, bytes, back);
    EXPECT_EQ(find_mismatch(a.get(), bytes, back), SIZE_MAX);
    peer.must(op::mem_close, there);
  }
}

TEST_F(CrossProcess, sycl_mem_open_repeat) {
  constexpr std::size_t bytes = 5 * 4096 + 7;
  usm_ptr a(malloc_device(bytes, dev, ctx), ctx);
  fill_pattern(a.get(), bytes, 77);
  handle h = mem::get(a.get(), ctx);
  peer_process peer;
  std::vector<std::uint64_t> opens;
  for (int i = 0; i < 8; ++i) opens.push_back(peer.must(op::mem_open, 0, 0, 0, h.data()).msg.a);
  // Unique pointers (ze.mem.open.unique), each needing its own close.
  EXPECT_EQ(std::set<std::uint64_t>(opens.begin(), opens.end()).size(), opens.size());
  EXPECT_EQ(peer.must(op::counts).msg.c, opens.size());
  peer.must(op::mem_close, opens[3]);
  for (std::size_t i = 0; i < opens.size(); ++i)
    if (i != 3) {
      EXPECT_EQ(peer.must(op::verify, opens[i], bytes, 77).msg.a, kNoMismatch) << "open " << i;
    }
  const peer_reply again = peer.call(op::mem_close, opens[3]);
  EXPECT_EQ(again.code(), errc::invalid) << again.text();
  EXPECT_NE(again.text().find("rb.close.double"), std::string::npos) << again.text();
  for (std::size_t i = 0; i < opens.size(); ++i)
    if (i != 3) peer.must(op::mem_close, opens[i]);
  EXPECT_EQ(peer.must(op::counts).msg.c, 0u);
}

TEST_F(CrossProcess, sycl_mem_put_keeps_open) {
  constexpr std::size_t bytes = 3 * 4096;
  usm_ptr a(malloc_device(bytes, dev, ctx), ctx);
  fill_pattern(a.get(), bytes, 5);
  handle h = mem::get(a.get(), ctx);
  const record::bytes copy = record_of(h.data());
  peer_process peer;
  const std::uint64_t there = peer.must(op::mem_open, 0, 0, 0, h.data()).msg.a;
  mem::put(h, ctx);
  // The peer's mapping outlives the put, both ways...
  EXPECT_EQ(peer.must(op::verify, there, bytes, 5).msg.a, kNoMismatch);
  peer.must(op::fill, there, bytes, 6);
  EXPECT_EQ(find_mismatch(a.get(), bytes, 6), SIZE_MAX);
  // ...but the put bytes no longer open there (rb.put.revokes).
  const peer_reply stale = peer.call(op::mem_open, 0, 0, 0, copy);
  EXPECT_EQ(stale.code(), errc::invalid) << stale.text();
  EXPECT_NE(stale.text().find("rb.put.revokes"), std::string::npos) << stale.text();
  peer.must(op::mem_close, there);
}

TEST_F(CrossProcess, rb_realloc_fresh) {
  constexpr std::size_t bytes = 2 * 4096;
  peer_process peer;
  // This process keeps each round's mapping while the peer frees and reallocates: the new
  // export comes back at the same descriptor number (and often address) as the freed one.
  opened_ptr previous;
  for (std::uint64_t round = 0; round < 6; ++round) {
    SCOPED_TRACE(round);
    const std::uint64_t ptr = peer.must(op::alloc, usm_device, bytes, 500 + round).msg.a;
    const peer_reply h = peer.must(op::mem_get, ptr);
    opened_ptr o(mem::open(h.bytes(), ctx, dev), ctx);
    EXPECT_EQ(find_mismatch(o.get(), bytes, 500 + round), SIZE_MAX);
    if (previous) {
      EXPECT_EQ(find_mismatch(previous.get(), bytes, 500 + round - 1), SIZE_MAX);
    }
    previous = std::move(o);
    peer.must(op::mem_put, h.msg.a);
    peer.must(op::free, ptr);
  }
}

TEST_F(CrossProcess, rb_close_no_leak) {
  constexpr std::size_t bytes = 16 * 4096;
  usm_ptr a(malloc_device(bytes, dev, ctx), ctx);
  handle h = mem::get(a.get(), ctx);
  physical_ref pm(physical_create(ctx, dev, 4 * gran, true), ctx);
  handle hp = phys::get(pm.get(), ctx);
  event_ref e(event_create(ctx, dev, {true, false}), ctx);
  handle he = ev::get(e.get(), ctx);
  peer_process peer;
  auto cycle = [&] {
    peer.must(op::mem_close, peer.must(op::mem_open, 0, 0, 0, h.data()).msg.a);
    const std::uint64_t o = peer.must(op::phys_open, 0, 0, 0, hp.data()).msg.a;
    peer.must(op::phys_unmap, peer.must(op::phys_map, o, 4 * gran).msg.a, 4 * gran);
    peer.must(op::phys_release, o);
    peer.must(op::event_release, peer.must(op::event_open, 0, 0, 0, he.data()).msg.a);
  };
  cycle();
  const message before = peer.must(op::counts).msg;
  for (int i = 0; i < 100; ++i) cycle();
  const message after = peer.must(op::counts).msg;
  // The consumer holds no extra descriptor or mapping after every open had its close.
  EXPECT_EQ(after.a, before.a) << "descriptors";
  EXPECT_EQ(after.b, before.b) << "mappings";
  EXPECT_EQ(after.c, 0u) << "open mappings";
}

// A waiter blocked in one process wakes on a signal from the other, in both directions,
// whichever process exported the event.
TEST_F(CrossProcess, ur_event_bidirectional) {
  peer_process peer;
  for (bool test_exports : {true, false}) {
    SCOPED_TRACE(test_exports ? "test exports" : "peer exports");
    event_ref own;
    std::uint64_t theirs = 0;
    if (test_exports) {
      own = event_ref(event_create(ctx, dev, {true, false}), ctx);
      handle h = ev::get(own.get(), ctx);
      theirs = peer.must(op::event_open, 0, 0, 0, h.data()).msg.a;
    } else {
      theirs = peer.must(op::event_create, 1).msg.a;
      const peer_reply h = peer.must(op::event_get, theirs);
      own = event_ref(ev::open(h.bytes(), ctx, dev), ctx);
    }
    // The peer blocks in event_wait until this process signals.
    peer.send(op::event_wait, theirs, 10000);
    EXPECT_FALSE(peer.poll_reply(200ms).has_value()) << "the peer's wait returned before any signal";
    event_signal(own.get());
    const std::optional<peer_reply> woke = peer.poll_reply(5s);
    ASSERT_TRUE(woke.has_value()) << "the peer's waiter was not woken";
    ASSERT_TRUE(woke->ok()) << woke->text();
    EXPECT_EQ(woke->msg.a, 1u);
    EXPECT_GE(woke->msg.b, std::uint64_t{150'000'000}) << "woke after " << woke->msg.b << " ns";
    // This process blocks until the peer signals, 200 ms from now.
    event_reset(own.get());
    EXPECT_EQ(peer.must(op::event_query, theirs).msg.a, 0u);
    peer.must(op::event_signal, theirs, 200);
    const auto start = steady::now();
    EXPECT_TRUE(event_wait(own.get(), 3s));
    const auto took = steady::now() - start;
    EXPECT_GE(took, 150ms);
    EXPECT_LT(took, 5s);
    EXPECT_EQ(peer.must(op::event_query, theirs).msg.a, 1u);
    // A wait in the other process with nothing to wake it times out.
    peer.must(op::event_reset, theirs);
    const message timed_out = peer.must(op::event_wait, theirs, 50).msg;
    EXPECT_EQ(timed_out.a, 0u);
    EXPECT_GE(timed_out.b, std::uint64_t{50'000'000});
    peer.must(op::event_release, theirs);
  }
}

TEST_F(CrossProcess, sycl_phys_roundtrip) {
  const std::size_t bytes = 8 * gran;
  physical_ref pm(physical_create(ctx, dev, bytes, true), ctx);
  reserved_range here(ctx, bytes);
  here.map(pm.get(), bytes);
  fill_pattern(here.get(), bytes, 31);
  handle h = phys::get(pm.get(), ctx);
  peer_process peer;
  const message opened = peer.must(op::phys_open, 0, 0, 0, h.data()).msg;
  // sycl.phys.open.keeps_size, sycl.phys.ipc_enabled, reference count 1, in the other process.
  EXPECT_EQ(opened.b, bytes);
  EXPECT_EQ(opened.c, 1u);
  EXPECT_EQ(opened.d, 1u);
  const std::uint64_t there = peer.must(op::phys_map, opened.a, bytes).msg.a;
  EXPECT_EQ(peer.must(op::verify, there, bytes, 31).msg.a, kNoMismatch);
  peer.must(op::fill, there, bytes, 32);
  EXPECT_EQ(find_mismatch(here.get(), bytes, 32), SIZE_MAX);
  // The mapping outlives the opened object's last reference and the put.
  peer.must(op::phys_release, opened.a);
  phys::put(h, ctx);
  EXPECT_EQ(peer.must(op::verify, there, bytes, 32).msg.a, kNoMismatch);
  peer.must(op::phys_unmap, there, bytes);
}

// Descriptors moved by SCM_RIGHTS (open_options::descriptor) instead of pidfd_getfd.
TEST_F(CrossProcess, sycl_mem_roundtrip_scm_rights) {
  constexpr std::size_t bytes = 4 * 4096 + 5;
  peer_process peer;
  // Peer to test: memory, physical memory, event.
  const std::uint64_t ptr = peer.must(op::alloc, usm_device, bytes, 41).msg.a;
  peer_reply h = peer.must(op::mem_get, ptr, 1);
  ASSERT_TRUE(h.fd) << "no descriptor came with the handle";
  open_options opts;
  opts.descriptor = h.fd.get();
  opened_ptr o(mem::open(h.bytes(), ctx, dev, opts), ctx);
  EXPECT_EQ(find_mismatch(o.get(), bytes, 41), SIZE_MAX);
  fill_pattern(o.get(), bytes, 42);
  EXPECT_EQ(peer.must(op::verify, ptr, bytes, 42).msg.a, kNoMismatch);

  const std::uint64_t ppm = peer.must(op::phys_create, 2 * gran, 1).msg.a;
  peer_reply hp = peer.must(op::phys_get, ppm, 1);
  ASSERT_TRUE(hp.fd);
  opts.descriptor = hp.fd.get();
  physical_ref opm(phys::open(hp.bytes(), ctx, dev, opts), ctx);
  EXPECT_EQ(physical_size(opm.get()), 2 * gran);

  const std::uint64_t pev = peer.must(op::event_create, 1).msg.a;
  peer_reply he = peer.must(op::event_get, pev, 1);
  ASSERT_TRUE(he.fd);
  opts.descriptor = he.fd.get();
  event_ref oev(ev::open(he.bytes(), ctx, dev, opts), ctx);
  peer.must(op::event_signal, pev);
  EXPECT_TRUE(event_query(oev.get()));

  // Test to peer: the peer opens with the descriptor this process sends.
  usm_ptr a(malloc_device(bytes, dev, ctx), ctx);
  fill_pattern(a.get(), bytes, 43);
  handle mine = mem::get(a.get(), ctx);
  const std::uint64_t there = peer.must(op::mem_open, 0, 0, 0, mine.data(), mine.descriptor()).msg.a;
  EXPECT_EQ(peer.must(op::verify, there, bytes, 43).msg.a, kNoMismatch);
  peer.must(op::mem_close, there);
  // The descriptor of another object, sent with these bytes, is refused.
  const std::uint64_t other = peer.must(op::alloc, usm_device, bytes, 44).msg.a;
  peer_reply ho = peer.must(op::mem_get, other, 1);
  opts.descriptor = ho.fd.get();
  EXPECT_TRUE(fails_with([&] { opened_ptr(mem::open(h.bytes(), ctx, dev, opts), ctx); }, errc::invalid,
                         {"token mismatch"}));
}

TEST_F(CrossProcess, rb_open_exporter_gone) {
  std::vector<std::byte> hm, hp, he;
  unique_fd scm_fd;  // the descriptor that came by SCM_RIGHTS outlives its sender
  {
    peer_process peer;
    peer_reply with_fd = peer.must(op::mem_get, peer.must(op::alloc, usm_device, 4096, 1).msg.a, 1);
    hm = bytes_of(with_fd);
    scm_fd = std::move(with_fd.fd);
    hp = bytes_of(peer.must(op::phys_get, peer.must(op::phys_create, gran, 1).msg.a));
    he = bytes_of(peer.must(op::event_get, peer.must(op::event_create, 1).msg.a));
    // Sanity: while the exporter lives, the bytes open.
    opened_ptr(mem::open(hm, ctx, dev), ctx);
    peer.must(op::exit, 0);
    EXPECT_EQ(describe_wait_status(peer.wait()), "exited with status 0");
  }
  // Promptly: no retry loop, no hang.
  const auto start = steady::now();
  EXPECT_TRUE(fails_with([&] { opened_ptr(mem::open(hm, ctx, dev), ctx); }, errc::exporter_gone,
                         {"rb.open.exporter_gone"}));
  EXPECT_TRUE(fails_with([&] { physical_ref(phys::open(hp, ctx, dev), ctx); }, errc::exporter_gone));
  EXPECT_TRUE(fails_with([&] { event_ref(ev::open(he, ctx, dev), ctx); }, errc::exporter_gone));
  // The same with the descriptor in hand: the export died with its exporter.
  ASSERT_TRUE(scm_fd);
  open_options opts;
  opts.descriptor = scm_fd.get();
  EXPECT_TRUE(fails_with([&] { opened_ptr(mem::open(hm, ctx, dev, opts), ctx); }, errc::exporter_gone,
                         {"rb.open.exporter_gone"}));
  EXPECT_LT(steady::now() - start, 1s);
}

// Killed, not exited: mappings already open stay readable (O), new opens fail cleanly (M).
TEST_F(CrossProcess, rb_producer_crash) {
  constexpr std::size_t bytes = 4 * 4096;
  std::vector<std::byte> hm;
  opened_ptr o;
  {
    peer_process peer;
    hm = bytes_of(peer.must(op::mem_get, peer.must(op::alloc, usm_device, bytes, 61).msg.a));
    o = opened_ptr(mem::open(hm, ctx, dev), ctx);
    peer.kill(SIGKILL);
    EXPECT_EQ(describe_wait_status(peer.wait()), "killed by signal KILL");
  }
  EXPECT_EQ(find_mismatch(o.get(), bytes, 61), SIZE_MAX);
  RecordProperty("rb.producer.crash.open_mapping", "readable");
  EXPECT_TRUE(fails_with([&] { opened_ptr(mem::open(hm, ctx, dev), ctx); }, errc::exporter_gone));
  EXPECT_NO_THROW(o.reset());
}

// A record naming a live process that is not the exporter, with the exporter's identity
// guard, never reaches that process's descriptors: exporter_gone, not a token check.
TEST_F(CrossProcess, rb_open_pid_reuse) {
  peer_process exporter, bystander;
  const pid_t bystander_pid = static_cast<pid_t>(bystander.must(op::hello).msg.a);
  ASSERT_EQ(bystander_pid, bystander.pid());
  struct kind_case {
    const char* name;
    op create, get;
    std::uint64_t a, b, c;
  };
  for (const kind_case k : {kind_case{"memory", op::alloc, op::mem_get, usm_device, 4096, 1},
                            kind_case{"physical", op::phys_create, op::phys_get, gran, 1, 0},
                            kind_case{"event", op::event_create, op::event_get, 1, 0, 0}}) {
    SCOPED_TRACE(k.name);
    const record::fields real =
        record::decode(exporter.must(k.get, exporter.must(k.create, k.a, k.b, k.c).msg.a).bytes());
    // The bystander holds a live export of the same kind and size.
    const record::fields decoy =
        record::decode(bystander.must(k.get, bystander.must(k.create, k.a, k.b, k.c).msg.a).bytes());
    // (a) The genuine record with the pid swapped; (b) the worst case: everything the
    // bystander's export needs (descriptor, slot, token), under the exporter's guard, so
    // that only the identity guard stands between the opener and the bystander's memory.
    record::fields swapped = real;
    swapped.pid = static_cast<std::uint32_t>(bystander_pid);
    record::fields borrowed = decoy;
    borrowed.guard_type = real.guard_type;
    borrowed.guard = real.guard;
    for (const auto& [what, forged_fields] : {std::pair{"pid swapped", swapped}, std::pair{"decoy's export", borrowed}}) {
      SCOPED_TRACE(what);
      const record::bytes forged = record::encode(forged_fields);
      const auto outcome = failure_of([&] {
        if (k.create == op::alloc) opened_ptr(mem::open(forged, ctx, dev), ctx);
        else if (k.create == op::phys_create) physical_ref(phys::open(forged, ctx, dev), ctx);
        else event_ref(ev::open(forged, ctx, dev), ctx);
      });
      ASSERT_TRUE(outcome.has_value()) << "opened a record naming another process";
      EXPECT_EQ(outcome->code, errc::exporter_gone) << outcome->message;
      EXPECT_NE(outcome->message.find("rb.open.pid_reuse"), std::string::npos) << outcome->message;
    }
  }
}

// Real pid reuse: the exporter exits, a new process is created with its pid (clone3
// set_tid) and exports objects of the same kinds at the same descriptor numbers. The old
// records must fail with exporter_gone and never reach the new process's objects.
TEST_F(CrossProcess, rb_open_pid_reuse_real) {
  std::vector<std::pair<record::kind, record::bytes>> old_records;
  pid_t old_pid = 0;
  auto export_all = [&](peer_process& p) {
    std::vector<std::pair<record::kind, record::bytes>> out;
    out.emplace_back(record::kind::memory,
                     record_of(p.must(op::mem_get, p.must(op::alloc, usm_device, 4096, 9).msg.a).bytes()));
    out.emplace_back(record::kind::physical_memory,
                     record_of(p.must(op::phys_get, p.must(op::phys_create, gran, 1).msg.a).bytes()));
    out.emplace_back(record::kind::event,
                     record_of(p.must(op::event_get, p.must(op::event_create, 1).msg.a).bytes()));
    return out;
  };
  {
    peer_process first;
    old_pid = first.pid();
    old_records = export_all(first);
    first.must(op::exit, 0);
    first.wait();
  }
  std::optional<peer_process> second;
  try {
    second.emplace(peer_options{{}, {}, old_pid});
  } catch (const std::system_error& e) {
    if (e.code().value() == EPERM) GTEST_SKIP() << "cannot choose a pid (clone3 set_tid needs CAP_SYS_ADMIN)";
    if (e.code().value() == EEXIST) GTEST_SKIP() << "pid " << old_pid << " was taken by another process first";
    throw;
  }
  ASSERT_EQ(static_cast<pid_t>(second->must(op::hello).msg.a), old_pid);
  const auto new_records = export_all(*second);
  for (std::size_t i = 0; i < old_records.size(); ++i) {
    // Plain names: clang 14 (the fuzz preset) cannot capture structured bindings.
    const auto kind = old_records[i].first;
    const auto& bytes = old_records[i].second;
    SCOPED_TRACE(record::kind_name(kind));
    // The new process holds an export of the same kind at the descriptor the old record names.
    EXPECT_EQ(record::decode(new_records[i].second).fd, record::decode(bytes).fd);
    const auto outcome = failure_of([&] {
      if (kind == record::kind::memory) opened_ptr(mem::open(bytes, ctx, dev), ctx);
      else if (kind == record::kind::physical_memory) physical_ref(phys::open(bytes, ctx, dev), ctx);
      else event_ref(ev::open(bytes, ctx, dev), ctx);
    });
    ASSERT_TRUE(outcome.has_value()) << "opened a record of an exporter that has exited";
    EXPECT_EQ(outcome->code, errc::exporter_gone) << outcome->message;
    EXPECT_NE(outcome->message.find("rb.open.pid_reuse"), std::string::npos) << outcome->message;
  }
}

// Pid reuse by the exporter's own descendant, after this process has opened the export (so
// that its next open takes the fast path: slot and witness only, object.hpp). The exporter E
// forks C and exits; C makes G with E's pid (clone3 set_tid). G holds everything E held at
// the same addresses and numbers (the data descriptor, the control page with its live
// tokens), everything but the witness, which the kernel wiped in C (MADV_WIPEONFORK): the
// old record must fail with exporter_gone, and never map through G.
TEST_F(CrossProcess, rb_open_pid_reuse_by_descendant) {
  int to_e[2], from_e[2], to_c[2], from_c[2];
  ASSERT_EQ(::pipe2(to_e, O_CLOEXEC), 0);
  ASSERT_EQ(::pipe2(from_e, O_CLOEXEC), 0);
  ASSERT_EQ(::pipe2(to_c, O_CLOEXEC), 0);
  ASSERT_EQ(::pipe2(from_c, O_CLOEXEC), 0);
  // C, orphaned when E exits, is reparented to this process, which reaps it and G.
  const int was_subreaper = [] {
    int v = 0;
    ::prctl(PR_GET_CHILD_SUBREAPER, &v);
    return v;
  }();
  ASSERT_EQ(::prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
  const pid_t e = ::fork();
  ASSERT_GE(e, 0);
  if (e == 0) {  // E: export, fork C, wait to be told to exit
    char go = 0;
    try {
      void* a = malloc_device(4096, dev, ctx);
      fill_pattern(a, 4096, 33);
      const handle h = mem::get(a, ctx);
      (void)!::write(from_e[1], h.data().data(), h.data().size());
    } catch (...) {
      ::_exit(3);
    }
    const pid_t c = ::fork();
    if (c == 0) {  // C: on "go", make G with E's pid and say which pid G got (or -errno)
      if (::read(to_c[0], &go, 1) != 1) ::_exit(4);
      pid_t want = 0;  // E's pid, through the pipe
      if (::read(to_c[0], &want, sizeof want) != static_cast<ssize_t>(sizeof want)) ::_exit(4);
      clone_args args{};
      args.exit_signal = SIGCHLD;
      args.set_tid = reinterpret_cast<std::uintptr_t>(&want);
      args.set_tid_size = 1;
      const long g = ::syscall(SYS_clone3, &args, sizeof args);
      if (g == 0)
        for (;;) ::pause();  // G: holds E's memory and descriptors until killed
      const long said = g < 0 ? -errno : g;
      (void)!::write(from_c[1], &said, sizeof said);
      for (;;) ::pause();
    }
    (void)!::write(from_e[1], &c, sizeof c);
    (void)!::read(to_e[0], &go, 1);
    ::_exit(0);
  }
  record::bytes rec{};
  ASSERT_EQ(::read(from_e[0], rec.data(), rec.size()), static_cast<ssize_t>(rec.size()));
  pid_t c = 0;
  ASSERT_EQ(::read(from_e[0], &c, sizeof c), static_cast<ssize_t>(sizeof c));
  bool e_reaped = false;
  auto cleanup = [&](pid_t g) {
    // C first: once it is reaped, G (its child) is this process's, to kill and reap.
    for (pid_t p : {c, g, e_reaped ? 0 : e})
      if (p > 0) {
        ::kill(p, SIGKILL);
        ::waitpid(p, nullptr, 0);
      }
    for (int* fds : {to_e, from_e, to_c, from_c}) {
      ::close(fds[0]);
      ::close(fds[1]);
    }
    ::prctl(PR_SET_CHILD_SUBREAPER, was_subreaper);
  };
  // Opened twice while E lives: the second open is the fast path's.
  for (int i = 0; i < 2; ++i) {
    opened_ptr o(mem::open(rec, ctx, dev), ctx);
    EXPECT_EQ(find_mismatch(o.get(), 4096, 33), SIZE_MAX);
  }
  // E exits and is reaped: its pid is free.
  ASSERT_EQ(::write(to_e[1], "x", 1), 1);
  int status = 0;
  ASSERT_EQ(::waitpid(e, &status, 0), e);
  e_reaped = true;
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  const pid_t e_pid = e;
  ASSERT_EQ(::write(to_c[1], "x", 1), 1);
  ASSERT_EQ(::write(to_c[1], &e_pid, sizeof e_pid), static_cast<ssize_t>(sizeof e_pid));
  long g = 0;
  ASSERT_EQ(::read(from_c[0], &g, sizeof g), static_cast<ssize_t>(sizeof g));
  if (g == -EPERM || g == -EEXIST) {
    cleanup(0);
    GTEST_SKIP() << (g == -EPERM ? "cannot choose a pid (clone3 set_tid needs CAP_SYS_ADMIN)"
                                 : "E's pid was taken by another process first");
  }
  if (g != e_pid) {
    cleanup(g > 0 ? static_cast<pid_t>(g) : 0);
    FAIL() << "clone3 set_tid " << e_pid << " answered " << g;
  }
  const auto outcome = failure_of([&] { opened_ptr(mem::open(rec, ctx, dev), ctx); });
  cleanup(static_cast<pid_t>(g));
  ASSERT_TRUE(outcome.has_value()) << "opened a record of an exporter that has exited, through its descendant";
  EXPECT_EQ(outcome->code, errc::exporter_gone) << outcome->message;
  EXPECT_NE(outcome->message.find("rb.open.pid_reuse"), std::string::npos) << outcome->message;
}

// Pid reuse by a process that shares the exporter's memory, after this process has opened
// the export (so that its next open takes the fast path). The exporter E makes C with
// clone(CLONE_VM): C shares E's memory, so nothing is wiped (no fork), and holds a copy of its
// descriptors. E exits; C makes G at E's pid (ns_last_pid, then clone(CLONE_VM)). G shows
// everything E showed, the witness included, and is not E: its identity guard differs. The
// fast path must check the guard as the whole proof does: exporter_gone (rb.open.pid_reuse).
namespace clone_vm_reuse {

struct shared {
  int to_c = -1, from_c = -1;  // C's pipe ends
  pid_t want = 0;
};

int g_main(void*) {
  for (;;) ::pause();  // G: holds E's memory and descriptors until killed
}

// C: on "go" (E's pid through the pipe), makes G at that pid and says which pid it got
// (-errno when it cannot choose one). Raw system calls only: C runs on E's memory and TLS.
int c_main(void* arg) {
  auto* sh = static_cast<shared*>(arg);
  pid_t want = 0;
  if (::read(sh->to_c, &want, sizeof want) != static_cast<ssize_t>(sizeof want)) ::_exit(4);
  static char stack[64 * 1024] __attribute__((aligned(16)));
  long said = -EEXIST;
  for (int attempt = 0; attempt < 200; ++attempt) {
    const int f = ::open("/proc/sys/kernel/ns_last_pid", O_WRONLY | O_CLOEXEC);
    if (f < 0) {
      said = -errno;
      break;
    }
    char digits[16];
    int n = 0;
    for (long v = want - 1; v > 0 || n == 0; v /= 10) digits[n++] = static_cast<char>('0' + v % 10);
    char text[16];
    for (int i = 0; i < n; ++i) text[i] = digits[n - 1 - i];
    const bool wrote = ::write(f, text, static_cast<std::size_t>(n)) == n;
    const int err = errno;
    ::close(f);
    if (!wrote) {
      said = -err;
      break;
    }
    const pid_t g = ::clone(g_main, stack + sizeof stack, CLONE_VM | SIGCHLD, nullptr);
    if (g == want) {
      said = g;
      break;
    }
    if (g > 0) {
      ::kill(g, SIGKILL);
      ::waitpid(g, nullptr, 0);
    }
  }
  (void)!::write(sh->from_c, &said, sizeof said);
  for (;;) ::pause();
}

}  // namespace clone_vm_reuse

TEST_F(CrossProcess, rb_open_pid_reuse_by_clone_vm) {
  int to_e[2], from_e[2], to_c[2], from_c[2];
  ASSERT_EQ(::pipe2(to_e, O_CLOEXEC), 0);
  ASSERT_EQ(::pipe2(from_e, O_CLOEXEC), 0);
  ASSERT_EQ(::pipe2(to_c, O_CLOEXEC), 0);
  ASSERT_EQ(::pipe2(from_c, O_CLOEXEC), 0);
  const int was_subreaper = [] {
    int v = 0;
    ::prctl(PR_GET_CHILD_SUBREAPER, &v);
    return v;
  }();
  ASSERT_EQ(::prctl(PR_SET_CHILD_SUBREAPER, 1), 0);  // C, orphaned when E exits, comes here
  const pid_t e = ::fork();
  ASSERT_GE(e, 0);
  if (e == 0) {  // E: export, make C (sharing this memory), wait to be told to exit
    char go = 0;
    try {
      void* a = malloc_device(4096, dev, ctx);
      fill_pattern(a, 4096, 35);
      const handle h = mem::get(a, ctx);
      (void)!::write(from_e[1], h.data().data(), h.data().size());
    } catch (...) {
      ::_exit(3);
    }
    static clone_vm_reuse::shared sh;
    sh.to_c = to_c[0];
    sh.from_c = from_c[1];
    static char stack[64 * 1024] __attribute__((aligned(16)));
    const pid_t c = ::clone(clone_vm_reuse::c_main, stack + sizeof stack, CLONE_VM | SIGCHLD, &sh);
    (void)!::write(from_e[1], &c, sizeof c);
    (void)!::read(to_e[0], &go, 1);
    ::_exit(0);
  }
  record::bytes rec{};
  ASSERT_EQ(::read(from_e[0], rec.data(), rec.size()), static_cast<ssize_t>(rec.size()));
  pid_t c = 0;
  ASSERT_EQ(::read(from_e[0], &c, sizeof c), static_cast<ssize_t>(sizeof c));
  ASSERT_GT(c, 0) << "clone(CLONE_VM) failed in the exporter";
  bool e_reaped = false;
  auto cleanup = [&](pid_t g) {
    for (pid_t p : {c, g, e_reaped ? 0 : e})
      if (p > 0) {
        ::kill(p, SIGKILL);
        ::waitpid(p, nullptr, 0);
      }
    for (int* fds : {to_e, from_e, to_c, from_c}) {
      ::close(fds[0]);
      ::close(fds[1]);
    }
    ::prctl(PR_SET_CHILD_SUBREAPER, was_subreaper);
  };
  for (int i = 0; i < 2; ++i) {  // opened twice while E lives: the second open is the fast path's
    opened_ptr o(mem::open(rec, ctx, dev), ctx);
    EXPECT_EQ(find_mismatch(o.get(), 4096, 35), SIZE_MAX);
  }
  ASSERT_EQ(::write(to_e[1], "x", 1), 1);
  int status = 0;
  ASSERT_EQ(::waitpid(e, &status, 0), e);
  e_reaped = true;
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  const pid_t e_pid = e;
  ASSERT_EQ(::write(to_c[1], &e_pid, sizeof e_pid), static_cast<ssize_t>(sizeof e_pid));
  long g = 0;
  ASSERT_EQ(::read(from_c[0], &g, sizeof g), static_cast<ssize_t>(sizeof g));
  if (g == -EPERM || g == -EACCES || g == -EROFS || g == -ENOENT || g == -EEXIST) {
    cleanup(0);
    GTEST_SKIP() << (g == -EEXIST ? "E's pid was taken by another process first (200 tries)"
                                  : "cannot choose a pid (writing ns_last_pid needs CAP_SYS_ADMIN)");
  }
  if (g != e_pid) {
    cleanup(g > 0 ? static_cast<pid_t>(g) : 0);
    FAIL() << "ns_last_pid + clone for pid " << e_pid << " answered " << g;
  }
  const auto outcome = failure_of([&] { opened_ptr(mem::open(rec, ctx, dev), ctx); });
  cleanup(static_cast<pid_t>(g));
  ASSERT_TRUE(outcome.has_value())
      << "opened a record of an exporter that has exited, through a process sharing its memory at its pid";
  EXPECT_EQ(outcome->code, errc::exporter_gone) << outcome->message;
  EXPECT_NE(outcome->message.find("rb.open.pid_reuse"), std::string::npos) << outcome->message;
}

// An exporter that closes ipcref's descriptor behind its back (dup2 of another file onto
// its number) while the object lives, after this process opened the export (so that the next
// open takes the fast path): the witness is intact and the token live, but the number now
// holds another file, which must never be mapped for the record.
TEST_F(CrossProcess, rb_open_confused_deputy_descriptor_replaced) {
  int to_e[2], from_e[2];
  ASSERT_EQ(::pipe2(to_e, O_CLOEXEC), 0);
  ASSERT_EQ(::pipe2(from_e, O_CLOEXEC), 0);
  const pid_t e = ::fork();
  ASSERT_GE(e, 0);
  if (e == 0) {  // E: export; on "s", put another memfd (bytes of seed 44) at the data's number
    char go = 0;
    record::bytes r{};
    try {
      void* a = malloc_device(4096, dev, ctx);
      fill_pattern(a, 4096, 33);
      const handle h = mem::get(a, ctx);
      std::copy(h.data().begin(), h.data().end(), r.begin());
    } catch (...) {
      ::_exit(3);
    }
    (void)!::write(from_e[1], r.data(), r.size());
    if (::read(to_e[0], &go, 1) != 1) ::_exit(4);
    const int other = ::memfd_create("not-ipcref", MFD_CLOEXEC);
    std::vector<unsigned char> bytes(4096);
    fill_pattern(bytes.data(), bytes.size(), 44);
    const bool swapped = other >= 0 && ::write(other, bytes.data(), bytes.size()) == 4096 &&
                         ::dup2(other, record::decode(r).fd) == record::decode(r).fd;
    (void)!::write(from_e[1], swapped ? "y" : "n", 1);
    (void)!::read(to_e[0], &go, 1);
    ::_exit(0);
  }
  record::bytes rec{};
  ASSERT_EQ(::read(from_e[0], rec.data(), rec.size()), static_cast<ssize_t>(rec.size()));
  auto cleanup = [&] {
    ::kill(e, SIGKILL);
    ::waitpid(e, nullptr, 0);
    for (int* fds : {to_e, from_e}) {
      ::close(fds[0]);
      ::close(fds[1]);
    }
  };
  for (int i = 0; i < 2; ++i) {  // the second open is the fast path's
    opened_ptr o(mem::open(rec, ctx, dev), ctx);
    EXPECT_EQ(find_mismatch(o.get(), 4096, 33), SIZE_MAX);
  }
  char said = 0;
  ASSERT_EQ(::write(to_e[1], "s", 1), 1);
  ASSERT_EQ(::read(from_e[0], &said, 1), 1);
  if (said != 'y') {
    cleanup();
    FAIL() << "the exporter could not put another file at its data descriptor's number";
  }
  std::optional<failure> outcome;
  std::size_t other_bytes = SIZE_MAX;
  outcome = failure_of([&] {
    opened_ptr o(mem::open(rec, ctx, dev), ctx);
    other_bytes = find_mismatch(o.get(), 4096, 44);
  });
  cleanup();
  ASSERT_TRUE(outcome.has_value()) << "mapped what the exporter's descriptor number holds now"
                                   << (other_bytes == SIZE_MAX ? " (the other file's bytes)" : "");
  EXPECT_EQ(outcome->code, errc::invalid) << outcome->message;
  EXPECT_NE(outcome->message.find("rb.open.confused_deputy"), std::string::npos) << outcome->message;
}

// Records forged to name another descriptor of the exporter (resealed, so the checksum
// holds) are refused; the genuine record still maps exactly its own allocation.
TEST_F(CrossProcess, rb_open_confused_deputy) {
  constexpr std::size_t bytes = 2 * 4096;
  peer_process peer;
  const std::uint64_t x = peer.must(op::alloc, usm_device, bytes, 71).msg.a;
  const std::uint64_t y = peer.must(op::alloc, usm_device, bytes, 72).msg.a;
  const record::bytes hx = record_of(peer.must(op::mem_get, x).bytes());
  const record::bytes hy = record_of(peer.must(op::mem_get, y).bytes());
  const record::bytes hp =
      record_of(peer.must(op::phys_get, peer.must(op::phys_create, bytes, 1).msg.a).bytes());
  const record::fields fx = record::decode(hx), fy = record::decode(hy), fp = record::decode(hp);
  ASSERT_NE(fx.fd, fy.fd);

  struct forgery {
    const char* what;
    void (*edit)(record::fields&, const record::fields& y, const record::fields& p);
  };
  const std::vector<forgery> forgeries = {
      {"another allocation's descriptor", [](auto& f, auto& y, auto&) { f.fd = y.fd; }},
      {"its descriptor and slot", [](auto& f, auto& y, auto&) {
         f.fd = y.fd;
         f.slot = y.slot;
       }},
      {"its descriptor and token", [](auto& f, auto& y, auto&) {
         f.fd = y.fd;
         f.token = y.token + 1;
       }},
      {"a physical object's descriptor", [](auto& f, auto&, auto& p) { f.fd = p.fd; }},
      {"stdin", [](auto& f, auto&, auto&) { f.fd = 0; }},
      {"stderr", [](auto& f, auto&, auto&) { f.fd = 2; }},
      {"an unused number", [](auto& f, auto&, auto&) { f.fd = 1000; }},
  };
  for (const forgery& g : forgeries) {
    SCOPED_TRACE(g.what);
    record::bytes b = hx;
    record::fields f = record::decode(b);
    g.edit(f, fy, fp);
    b = record::encode(f);
    ASSERT_EQ(record::check(b, record::kind::memory, "x"), std::nullopt) << "the forgery is not well framed";
    // The same record, resealed by hand from the mutated bytes, is what an attacker sends.
    record::bytes resealed = hx;
    std::copy(b.begin(), b.begin() + 56, resealed.begin());
    record::reseal(resealed);
    ASSERT_EQ(resealed, b);
    EXPECT_TRUE(fails_with([&] { opened_ptr(mem::open(resealed, ctx, dev), ctx); }, errc::invalid));
  }
  // The genuine record maps X, never Y.
  opened_ptr o(mem::open(hx, ctx, dev), ctx);
  EXPECT_EQ(find_mismatch(o.get(), bytes, 71), SIZE_MAX);
}

// A consumer killed with mappings, a physical mapping and an event wait open leaves the
// producer working and holding nothing more than before.
TEST_F(CrossProcess, rb_consumer_crash) {
  constexpr std::size_t bytes = 8 * 4096;
  usm_ptr a(malloc_device(bytes, dev, ctx), ctx);
  fill_pattern(a.get(), bytes, 81);
  handle h = mem::get(a.get(), ctx);
  physical_ref pm(physical_create(ctx, dev, 2 * gran, true), ctx);
  handle hp = phys::get(pm.get(), ctx);
  event_ref e(event_create(ctx, dev, {true, false}), ctx);
  handle he = ev::get(e.get(), ctx);
  const process_audit before = audit_self();
  const resource_counts rc_before = get_resource_counts();
  {
    peer_process peer;
    const std::uint64_t there = peer.must(op::mem_open, 0, 0, 0, h.data()).msg.a;
    peer.must(op::fill, there, bytes, 82);
    const std::uint64_t opm = peer.must(op::phys_open, 0, 0, 0, hp.data()).msg.a;
    peer.must(op::phys_map, opm, 2 * gran);
    const std::uint64_t oev = peer.must(op::event_open, 0, 0, 0, he.data()).msg.a;
    peer.send(op::event_wait, oev, 60000);
    EXPECT_FALSE(peer.poll_reply(100ms).has_value());
    peer.kill(SIGKILL);
    EXPECT_EQ(describe_wait_status(peer.wait()), "killed by signal KILL");
  }
  // The producer keeps working: its memory (with the consumer's last writes), its event, its exports.
  EXPECT_EQ(find_mismatch(a.get(), bytes, 82), SIZE_MAX);
  event_signal(e.get());
  EXPECT_TRUE(event_wait(e.get(), 1s));
  event_reset(e.get());
  {
    peer_process next;
    const std::uint64_t there = next.must(op::mem_open, 0, 0, 0, h.data()).msg.a;
    EXPECT_EQ(next.must(op::verify, there, bytes, 82).msg.a, kNoMismatch);
    const std::uint64_t oev = next.must(op::event_open, 0, 0, 0, he.data()).msg.a;
    next.send(op::event_wait, oev, 10000);
    event_signal(e.get());
    const std::optional<peer_reply> woke = next.poll_reply(5s);
    ASSERT_TRUE(woke.has_value());
    EXPECT_EQ(woke->msg.a, 1u);
    EXPECT_EQ(next.must(op::phys_open, 0, 0, 0, hp.data()).msg.b, 2 * gran);
    next.must(op::exit, 0);
    EXPECT_EQ(describe_wait_status(next.wait()), "exited with status 0");
  }
  // Nothing left behind in the producer.
  const process_audit after = audit_self();
  EXPECT_EQ(after.descriptors, before.descriptors) << describe_change(before, after);
  EXPECT_EQ(after.ipcref_mappings, before.ipcref_mappings) << describe_change(before, after);
  const resource_counts rc_after = get_resource_counts();
  EXPECT_EQ(rc_after.live_exports, rc_before.live_exports);
  EXPECT_EQ(rc_after.open_mappings, rc_before.open_mappings);
}

}  // namespace
