// Profile RB in one process: leaks, hand-made garbage, forged identities.
#include <gtest/gtest.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstring>
#include <string>

#include <vector>

#include "ipcref/ipcref.hpp"
#include "support/audit.hpp"
#include "support/checks.hpp"
#include "support/devices.hpp"
#include "support/owned.hpp"
#include "support/pattern.hpp"

namespace {

using namespace ipcref;
using namespace ipcref_test;
namespace mem = ipcref::ipc::memory;
namespace phys = ipcref::ipc::physical_memory;
namespace ev = ipcref::ipc::event;

struct Robustness : testing::Test {
  context ctx;
  device dev = ipc_device();
};

record::bytes forged(const handle& h, void (*edit)(record::fields&)) {
  record::fields f = record::decode(h.data());
  edit(f);
  return record::encode(f);
}

TEST_F(Robustness, rb_close_no_leak) {
  usm_ptr a(malloc_device(64 * 1024, dev, ctx), ctx);
  fill_pattern(a.get(), 64 * 1024, 3);
  handle hm = mem::get(a.get(), ctx);
  physical_ref pm(physical_create(ctx, dev, 4 * physical_granularity(), true), ctx);
  handle hp = phys::get(pm.get(), ctx);
  event_ref e(event_create(ctx, dev, {true, false}), ctx);
  handle he = ev::get(e.get(), ctx);

  auto cycle = [&] {
    void* p = mem::open(hm.data(), ctx, dev);
    const bool intact = find_mismatch(p, 64 * 1024, 3) == SIZE_MAX;
    mem::close(p, ctx);
    physical_mem o = phys::open(hp.data(), ctx, dev);
    {
      reserved_range r(ctx, physical_size(o));
      r.map(o, physical_size(o));
    }
    phys::close(o, ctx);
    event oe = ev::open(he.data(), ctx, dev);
    event_signal(oe);
    event_release(oe);
    return intact;
  };
  ASSERT_TRUE(cycle());  // warm-up: the first call may set up lazily created state
  const process_audit before = audit_self();
  const resource_counts rc_before = get_resource_counts();
  constexpr int kCycles = 300;
  int intact = 0;
  for (int i = 0; i < kCycles; ++i) intact += cycle();
  EXPECT_EQ(intact, kCycles);
  const process_audit after = audit_self();
  const resource_counts rc_after = get_resource_counts();
  // Every open had its close: no descriptor, mapping or library object is left behind.
  EXPECT_EQ(after.descriptors, before.descriptors) << describe_change(before, after);
  EXPECT_EQ(after.ipcref_mappings, before.ipcref_mappings) << describe_change(before, after);
  EXPECT_EQ(after.mappings, before.mappings) << describe_change(before, after);
  EXPECT_EQ(rc_after.open_mappings, rc_before.open_mappings);
  EXPECT_EQ(rc_after.physical_objects, rc_before.physical_objects);
  EXPECT_EQ(rc_after.events, rc_before.events);
  EXPECT_EQ(rc_after.reservations, rc_before.reservations);
  RecordProperty("cycles", kCycles);
}

// Freeing everything returns the process to where it was (exports, memfds, mappings).
TEST_F(Robustness, rb_close_no_leak_after_free) {
  const process_audit before = audit_self();
  const resource_counts rc_before = get_resource_counts();
  {
    usm_ptr a(malloc_device(8192, dev, ctx), ctx);
    handle h1 = mem::get(a.get(), ctx);
    handle h2 = mem::get(a.get(), ctx);
    opened_ptr o(mem::open(h1.data(), ctx, dev), ctx);
    physical_ref pm(physical_create(ctx, dev, physical_granularity(), true), ctx);
    handle hp = phys::get(pm.get(), ctx);
    event_ref e(event_create(ctx, dev, {true, false}), ctx);
    handle he = ev::get(e.get(), ctx);
    EXPECT_TRUE(h2.valid() && hp.valid() && he.valid());
    EXPECT_GE(get_resource_counts().live_exports, 4u);
  }
  const process_audit after = audit_self();
  EXPECT_EQ(after.descriptors, before.descriptors) << describe_change(before, after);
  EXPECT_EQ(after.ipcref_mappings, before.ipcref_mappings) << describe_change(before, after);
  const resource_counts rc = get_resource_counts();
  EXPECT_EQ(rc.live_exports, rc_before.live_exports);
  EXPECT_EQ(rc.allocations, rc_before.allocations);
  EXPECT_EQ(rc.open_mappings, rc_before.open_mappings);
  EXPECT_EQ(rc.physical_objects, rc_before.physical_objects);
  EXPECT_EQ(rc.events, rc_before.events);
}

TEST_F(Robustness, rb_open_garbage_handmade) {
  usm_ptr a(malloc_device(4096, dev, ctx), ctx);
  handle h = mem::get(a.get(), ctx);
  const record::bytes zero{};
  EXPECT_TRUE(fails_with([&] { opened_ptr(mem::open(zero, ctx, dev), ctx); }, errc::invalid, {"magic"}));
  record::bytes ones;
  ones.fill(std::byte{0xff});
  EXPECT_TRUE(fails_with([&] { opened_ptr(mem::open(ones, ctx, dev), ctx); }, errc::invalid, {"magic"}));
  // A memory handle is not an event or physical handle, and the reverse.
  EXPECT_TRUE(fails_with([&] { event_ref(ev::open(h.data(), ctx, dev), ctx); }, errc::invalid,
                         {"memory handle", "expected event"}));
  EXPECT_TRUE(fails_with([&] { physical_ref(phys::open(h.data(), ctx, dev), ctx); }, errc::invalid,
                         {"memory handle", "expected physical_memory"}));
  // Forged with a valid checksum: another slot, size, offset or token of the same object.
  const std::vector<std::pair<const char*, void (*)(record::fields&)>> edits = {
      {"slot", [](record::fields& f) { f.slot += 1; }},
      {"slot past the end", [](record::fields& f) { f.slot = 1u << 30; }},
      {"size", [](record::fields& f) { f.size += 4096; }},
      {"offset", [](record::fields& f) { f.offset = 4096; }},
      {"offset past the object", [](record::fields& f) { f.offset = 1ull << 40; }},
      {"token", [](record::fields& f) { f.token ^= 1; }},
      {"fd of stdin", [](record::fields& f) { f.fd = 0; }},
      {"unused fd", [](record::fields& f) { f.fd = 1 << 20; }},
  };
  for (const auto& [what, edit] : edits) {
    SCOPED_TRACE(what);
    const record::bytes b = forged(h, edit);
    EXPECT_TRUE(fails_with([&] { opened_ptr(mem::open(b, ctx, dev), ctx); }, errc::invalid));
  }
  EXPECT_EQ(get_resource_counts().open_mappings, 0u);
}

// rb.open.cross_kind: every kind's handle presented to every other kind's open is refused.
TEST_F(Robustness, rb_open_cross_kind) {
  usm_ptr a(malloc_device(physical_granularity(), dev, ctx), ctx);
  handle memory = mem::get(a.get(), ctx);
  physical_ref pm(physical_create(ctx, dev, physical_granularity(), true), ctx);
  handle physical = phys::get(pm.get(), ctx);
  event_ref e(event_create(ctx, dev, {true, false}), ctx);
  handle event = ev::get(e.get(), ctx);
  const auto as_memory = [&](const handle& h) { opened_ptr(mem::open(h.data(), ctx, dev), ctx); };
  const auto as_physical = [&](const handle& h) { physical_ref(phys::open(h.data(), ctx, dev), ctx); };
  const auto as_event = [&](const handle& h) { event_ref(ev::open(h.data(), ctx, dev), ctx); };
  EXPECT_TRUE(fails_with([&] { as_physical(memory); }, errc::invalid, {"memory handle"}));
  EXPECT_TRUE(fails_with([&] { as_event(memory); }, errc::invalid, {"memory handle"}));
  EXPECT_TRUE(fails_with([&] { as_memory(physical); }, errc::invalid, {"physical_memory handle"}));
  EXPECT_TRUE(fails_with([&] { as_event(physical); }, errc::invalid, {"physical_memory handle"}));
  EXPECT_TRUE(fails_with([&] { as_memory(event); }, errc::invalid, {"event handle"}));
  EXPECT_TRUE(fails_with([&] { as_physical(event); }, errc::invalid, {"event handle"}));
  EXPECT_EQ(get_resource_counts().open_mappings, 0u);
}

// rb.open.forged_range: a live export's record with another range of the same object,
// checksum made valid, is refused; the export itself still opens exactly its bytes.
TEST_F(Robustness, rb_open_forged_range) {
  const std::size_t bytes = 4 * 4096;
  usm_ptr a(malloc_device(bytes, dev, ctx), ctx);
  fill_pattern(a.get(), bytes, 91);
  handle h = mem::get(a.as<char>() + 4096, ctx);  // exports [4096, bytes)
  const std::vector<std::pair<const char*, void (*)(record::fields&)>> edits = {
      {"offset 0 (the unexported first page)", [](record::fields& f) { f.offset = 0; }},
      {"offset + 4096", [](record::fields& f) { f.offset += 4096; f.size -= 4096; }},
      {"size / 2", [](record::fields& f) { f.size /= 2; }},
      {"size + 4096 from offset 0", [](record::fields& f) { f.offset = 0; f.size += 4096; }},
  };
  for (const auto& [what, edit] : edits) {
    SCOPED_TRACE(what);
    const record::bytes b = forged(h, edit);
    EXPECT_TRUE(fails_with([&] { opened_ptr(mem::open(b, ctx, dev), ctx); }, errc::invalid, {"token mismatch"}));
  }
  opened_ptr o(mem::open(h.data(), ctx, dev), ctx);
  EXPECT_EQ(std::memcmp(o.get(), a.as<char>() + 4096, bytes - 4096), 0);
  EXPECT_EQ(get_pointer_info(o.get(), ctx).size, bytes - 4096);
}

// This process's pid with another identity guard is a process that has exited.
TEST_F(Robustness, rb_open_pid_reuse_self) {
  usm_ptr a(malloc_device(4096, dev, ctx), ctx);
  handle h = mem::get(a.get(), ctx);
  const record::bytes b = forged(h, [](record::fields& f) { f.guard ^= 1; });
  EXPECT_TRUE(fails_with([&] { opened_ptr(mem::open(b, ctx, dev), ctx); }, errc::exporter_gone,
                         {"identity guard mismatch"}));
  const record::bytes k = forged(h, [](record::fields& f) {
    f.guard_type = f.guard_type == record::guard_kind::pidfs_inode ? record::guard_kind::start_time
                                                                    : record::guard_kind::pidfs_inode;
  });
  EXPECT_TRUE(fails_with([&] { opened_ptr(mem::open(k, ctx, dev), ctx); }, errc::exporter_gone));
}

// pid 1 is alive and never this test's exporter: its descriptors must stay out of reach.
TEST_F(Robustness, rb_open_pid_reuse_init) {
  usm_ptr a(malloc_device(4096, dev, ctx), ctx);
  handle h = mem::get(a.get(), ctx);
  const record::bytes b = forged(h, [](record::fields& f) { f.pid = 1; });
  EXPECT_TRUE(fails_with([&] { opened_ptr(mem::open(b, ctx, dev), ctx); }, errc::exporter_gone,
                         {"rb.open.pid_reuse"}));
}

// Only the exporter may put: bytes copied into another handle object are refused.
TEST_F(Robustness, put_needs_the_exporters_handle) {
  usm_ptr a(malloc_device(4096, dev, ctx), ctx);
  handle h = mem::get(a.get(), ctx);
  handle never;
  EXPECT_FALSE(never.valid());
  EXPECT_TRUE(fails_with([&] { mem::put(never, ctx); }, errc::invalid, {"already put"}));
  context other;
  EXPECT_TRUE(fails_with([&] { mem::put(h, other); }, errc::invalid, {"another context"}));
  EXPECT_TRUE(h.valid());
  // The kind is checked too.
  EXPECT_TRUE(fails_with([&] { ev::put(h, ctx); }, errc::invalid, {"expected event"}));
  EXPECT_NO_THROW(mem::put(h, ctx));
}

TEST_F(Robustness, exporter_guard_kind_is_known) {
  const std::string kind = exporter_guard_kind();
  EXPECT_TRUE(kind == "pidfs_inode" || kind == "start_time") << kind;
  RecordProperty("exporter_guard_kind", kind);
  EXPECT_TRUE(fails_with([&] { allow_importer(0); }, errc::invalid));
  EXPECT_NO_THROW(allow_importer(::getpid()));
}

}  // namespace

// A child stamps its own identity, never its parent's, however it was forked: fork()
// (which runs fork handlers) and a raw clone (which runs none). ipcref caches who it is.
TEST_F(Robustness, rb_child_stamps_its_own_identity) {
  usm_ptr a(malloc_device(4096, dev, ctx), ctx);
  handle h = mem::get(a.get(), ctx);  // the parent's identity is cached from here on
  const record::fields parent = record::decode(h.data());
  ASSERT_EQ(parent.pid, static_cast<std::uint32_t>(::getpid()));
  auto child_stamp = [&](bool raw_clone) {
    int fds[2];
    if (::pipe(fds) != 0) return std::string("pipe failed");
    const pid_t pid = raw_clone ? static_cast<pid_t>(::syscall(SYS_clone, SIGCHLD, nullptr, nullptr, nullptr, 0))
                                : ::fork();
    if (pid == 0) {
      ::close(fds[0]);
      record::fields f{};
      try {
        f = record::decode(mem::get(a.get(), ctx).data());
      } catch (...) {
      }
      const bool own = f.pid == static_cast<std::uint32_t>(::getpid()) && f.guard != parent.guard;
      (void)!::write(fds[1], own ? "y" : "n", 1);
      ::_exit(0);
    }
    ::close(fds[1]);
    char c = '?';
    (void)!::read(fds[0], &c, 1);
    ::close(fds[0]);
    int status = 0;
    ::waitpid(pid, &status, 0);
    return std::string(1, c);
  };
  EXPECT_EQ(child_stamp(false), "y") << "a child made by fork() stamped its parent's identity";
  EXPECT_EQ(child_stamp(true), "y") << "a child made by a raw clone stamped its parent's identity";
  // And the parent still stamps its own.
  EXPECT_EQ(record::decode(mem::get(a.get(), ctx).data()).pid, static_cast<std::uint32_t>(::getpid()));
}
