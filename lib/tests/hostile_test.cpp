// A hostile importer (clause rb.revoke.tamper): this test process opens an export of an
// ipcref_peer, takes every descriptor it is handed or can take (the data descriptor the
// exporter sends by SCM_RIGHTS, the one its handle names through pidfd_getfd, the control
// descriptor), maps them however the kernel lets it, snapshots every page of all of them
// and of its mapping, and writes every snapshot back after the exporter puts the export,
// and again after it frees the object. The put and freed handles must stay refused, the
// control object must refuse every way of writing it, and nothing of the exporter beyond
// the exported object may be reachable. What stays possible, by design: a descriptor gives
// the whole object it refers to (an interior export's descriptor reaches the rest of its
// allocation), and writing the data is what importers are for.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <ostream>
#include <string>
#include <tuple>
#include <unordered_set>
#include <utility>
#include <vector>

#include "ipcref/ipcref.hpp"
#include "support/checks.hpp"
#include "support/devices.hpp"
#include "support/owned.hpp"
#include "support/pattern.hpp"
#include "support/peer_process.hpp"

namespace {

using namespace ipcref;
using namespace ipcref_test;
namespace mem = ipcref::ipc::memory;
namespace phys = ipcref::ipc::physical_memory;
namespace ev = ipcref::ipc::event;

constexpr std::uint64_t kSeed = 0x7a3, kDecoySeed = 0xdec0;
// The decoy the exporter never exports: none of its bytes may reach the importer.
constexpr std::size_t kDecoyBytes = 2 * 4096;

std::size_t page() { return static_cast<std::size_t>(::sysconf(_SC_PAGESIZE)); }

std::vector<std::byte> pattern_bytes(std::uint64_t seed, std::size_t bytes) {
  std::vector<std::byte> out(bytes);
  fill_pattern(out.data(), bytes, seed);
  return out;
}

std::size_t size_of(int fd) {
  struct stat st{};
  return ::fstat(fd, &st) == 0 ? static_cast<std::size_t>(st.st_size) : 0;
}

std::vector<std::byte> read_all(int fd) {
  std::vector<std::byte> out(size_of(fd));
  std::size_t got = 0;
  while (got < out.size()) {
    const ssize_t n = ::pread(fd, out.data() + got, out.size() - got, static_cast<off_t>(got));
    if (n <= 0) break;
    got += static_cast<std::size_t>(n);
  }
  out.resize(got);
  return out;
}

// [start, end) of the mapping of this process that holds `p`, from /proc/self/maps.
std::pair<std::uintptr_t, std::uintptr_t> mapping_around(const void* p) {
  const auto at = reinterpret_cast<std::uintptr_t>(p);
  std::ifstream maps("/proc/self/maps");
  for (std::string line; std::getline(maps, line);) {
    unsigned long long start = 0, end = 0;
    if (std::sscanf(line.c_str(), "%llx-%llx", &start, &end) == 2 && at >= start && at < end) return {start, end};
  }
  return {0, 0};
}

// Whether any aligned word of `bytes` is a word of the decoy's pattern.
bool holds_decoy(std::span<const std::byte> bytes, std::size_t decoy_bytes) {
  std::unordered_set<std::uint64_t> words;
  for (std::size_t i = 0; i < decoy_bytes / 8; ++i) words.insert(pattern_word(kDecoySeed, i));
  for (std::size_t i = 0; i + 8 <= bytes.size(); i += 8) {
    std::uint64_t w = 0;
    std::memcpy(&w, bytes.data() + i, 8);
    if (words.count(w)) return true;
  }
  return false;
}

// Every way of writing a file through a descriptor: the names of those that worked.
std::vector<std::string> writes_that_work(int fd) {
  std::vector<std::string> worked;
  const std::size_t len = std::max(size_of(fd), page());
  char byte = 0x5a;
  if (::pwrite(fd, &byte, 1, 0) == 1) worked.push_back("pwrite");
  if (void* w = ::mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0); w != MAP_FAILED) {
    worked.push_back("mmap(PROT_WRITE, MAP_SHARED)");
    ::munmap(w, len);
  }
  if (void* r = ::mmap(nullptr, len, PROT_READ, MAP_SHARED, fd, 0); r != MAP_FAILED) {
    if (::mprotect(r, len, PROT_READ | PROT_WRITE) == 0) worked.push_back("mprotect of a read-only mapping");
    ::munmap(r, len);
  }
  if (::fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, static_cast<off_t>(len)) == 0)
    worked.push_back("fallocate(PUNCH_HOLE)");
  const std::string path = "/proc/self/fd/" + std::to_string(fd);
  if (unique_fd again(::open(path.c_str(), O_RDWR | O_CLOEXEC)); again && ::pwrite(again.get(), &byte, 1, 0) == 1)
    worked.push_back("pwrite through a reopened /proc/self/fd");
  return worked;
}

// What can change an object's shape (size, seals): the names of those that worked.
std::vector<std::string> reshapes_that_work(int fd) {
  std::vector<std::string> worked;
  const std::size_t size = size_of(fd);
  if (::ftruncate(fd, static_cast<off_t>(size + page())) == 0) worked.push_back("ftruncate (grow)");
  if (size && ::ftruncate(fd, static_cast<off_t>(size - page())) == 0) worked.push_back("ftruncate (shrink)");
  if (::fcntl(fd, F_ADD_SEALS, F_SEAL_FUTURE_WRITE) == 0) worked.push_back("F_ADD_SEALS");
  return worked;
}

std::string joined(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ", ") + s;
  return out.empty() ? "none" : out;
}

enum class target_kind { memory, physical, event };
const char* name_of(target_kind k) {
  switch (k) {
    case target_kind::memory: return "memory";
    case target_kind::physical: return "physical";
    case target_kind::event: return "event";
  }
  return "unknown";
}
// Test names and logs show the kind by name, not as bytes.
[[maybe_unused]] void PrintTo(target_kind k, std::ostream* os) { *os << name_of(k); }

// One descriptor this importer holds: where it came from, a writable mapping of it when the
// kernel gave one, and the snapshot of its whole content.
struct taken {
  taken(std::string what, unique_fd descriptor, bool is_control = false)
      : from(std::move(what)), fd(std::move(descriptor)), control(is_control) {}
  taken(taken&& o) noexcept
      : from(std::move(o.from)), fd(std::move(o.fd)), control(o.control), writable(std::exchange(o.writable, nullptr)),
        length(o.length), snapshot(std::move(o.snapshot)) {}
  taken& operator=(taken&&) = delete;
  ~taken() {
    if (writable) ::munmap(writable, length);
  }
  std::string from;
  unique_fd fd;
  bool control = false;
  void* writable = nullptr;
  std::size_t length = 0;
  std::vector<std::byte> snapshot;
};

struct HostileImporter : testing::TestWithParam<target_kind> {
  context ctx;
  device dev = ipc_device();
  peer_process peer;

  // The exporter's side, in the peer.
  std::uint64_t object = 0;   // allocation base, physical object or event
  std::uint64_t handle_id = 0;
  std::size_t object_bytes = 0;  // what the data object holds
  std::size_t export_offset = 0, export_bytes = 0;
  std::vector<std::byte> bytes;  // the handle

  void export_target(target_kind k, unique_fd& data, unique_fd& control) {
    const std::size_t p = page();
    peer_reply h;
    switch (k) {
      case target_kind::memory:
        // An interior export: pages 1 and 2 of a 3-page allocation.
        object_bytes = 3 * p;
        export_offset = p;
        export_bytes = 2 * p;
        object = peer.must(op::alloc, usm_device, object_bytes, kSeed).msg.a;
        h = peer.must(op::mem_get, object + export_offset, 1);
        break;
      case target_kind::physical: {
        object_bytes = export_bytes = 2 * p;
        object = peer.must(op::phys_create, object_bytes, 1).msg.a;
        const std::uint64_t view = peer.must(op::phys_map, object, object_bytes).msg.a;
        peer.must(op::fill, view, object_bytes, kSeed);
        peer.must(op::phys_unmap, view, object_bytes);
        h = peer.must(op::phys_get, object, 1);
        break;
      }
      case target_kind::event:
        object_bytes = export_bytes = p;
        object = peer.must(op::event_create, 1).msg.a;
        h = peer.must(op::event_get, object, 1);
        break;
    }
    handle_id = h.msg.a;
    bytes.assign(h.bytes().begin(), h.bytes().end());
    data = std::move(h.fd);
    control = std::move(peer.must(op::control_get, handle_id).fd);
  }

  void put(target_kind k) {
    peer.must(k == target_kind::memory ? op::mem_put : k == target_kind::physical ? op::phys_put : op::event_put,
              handle_id);
  }
  void free_object(target_kind k) {
    peer.must(k == target_kind::memory ? op::free : k == target_kind::physical ? op::phys_release : op::event_release,
              object);
  }

  // Opens `bytes` as `k` and closes it again; the failure, if any.
  std::optional<failure> try_open(target_kind k, const open_options& opts) {
    return failure_of([&] {
      switch (k) {
        case target_kind::memory: opened_ptr(mem::open(bytes, ctx, dev, opts), ctx).reset(); break;
        case target_kind::physical: physical_ref(phys::open(bytes, ctx, dev, opts), ctx).reset(); break;
        case target_kind::event: event_ref(ev::open(bytes, ctx, dev, opts), ctx).reset(); break;
      }
    });
  }

  // The stale handle, by every route an importer has, must be refused.
  void expect_refused(target_kind k, const char* after, int data_fd, int control_fd) {
    struct route {
      const char* name;
      open_options opts;
    };
    const route routes[] = {{"pidfd_getfd", {}},
                            {"SCM_RIGHTS descriptor", {data_fd, -1}},
                            {"SCM_RIGHTS descriptor and control descriptor", {data_fd, control_fd}}};
    for (const route& r : routes) {
      const std::optional<failure> f = try_open(k, r.opts);
      if (!f) {
        ADD_FAILURE() << "after " << after << " and every snapshot written back, the handle opened again ("
                      << r.name << "): rb.revoke.tamper broken";
        continue;
      }
      EXPECT_TRUE(f->code == errc::invalid || f->code == errc::exporter_gone)
          << after << ", " << r.name << ": " << errc_name(f->code) << ": " << f->message;
    }
  }

  // The importer's side, in this process: the honest open, kept across the put and the free
  // as an importer keeps its mappings, the range of the mapping it made (none for an event),
  // every descriptor it holds, and the snapshot of that mapping. Declared in the order they
  // are made, so that they are released in the reverse order.
  opened_ptr opened_mem;
  physical_ref opened_phys;
  std::optional<reserved_range> phys_view;
  event_ref opened_event;
  std::uintptr_t map_start = 0, map_end = 0;
  std::vector<taken> held;
  std::vector<std::byte> mapping_snapshot;

  // Opens the export honestly and checks that the mapping shows the export's bytes and
  // covers nothing more.
  void open_honestly(target_kind k) {
    switch (k) {
      case target_kind::memory:
        opened_mem = opened_ptr(mem::open(bytes, ctx, dev), ctx);
        ASSERT_EQ(std::memcmp(opened_mem.get(), pattern_bytes(kSeed, object_bytes).data() + export_offset, export_bytes), 0);
        std::tie(map_start, map_end) = mapping_around(opened_mem.get());
        // The mapping covers the export's pages and nothing more.
        EXPECT_EQ(map_start, reinterpret_cast<std::uintptr_t>(opened_mem.get()));
        EXPECT_EQ(map_end - map_start, export_bytes) << "the open mapped beyond the export";
        break;
      case target_kind::physical:
        opened_phys = physical_ref(phys::open(bytes, ctx, dev), ctx);
        phys_view.emplace(ctx, object_bytes);
        phys_view->map(opened_phys.get(), object_bytes);
        ASSERT_EQ(find_mismatch(phys_view->get(), object_bytes, kSeed), SIZE_MAX);
        std::tie(map_start, map_end) = mapping_around(phys_view->get());
        EXPECT_EQ(map_start, reinterpret_cast<std::uintptr_t>(phys_view->get()));
        EXPECT_EQ(map_end - map_start, object_bytes);
        break;
      case target_kind::event:
        opened_event = event_ref(ev::open(bytes, ctx, dev), ctx);
        break;
    }
  }

  // Every descriptor this importer can have: the two the exporter handed it, and the one
  // its handle names (`named_fd`, in the exporter), taken with pidfd_getfd (this process may
  // ptrace its child).
  void take_descriptors(unique_fd scm_data, unique_fd scm_control, int named_fd) {
    held.emplace_back("the data descriptor sent by SCM_RIGHTS", std::move(scm_data));
    held.emplace_back("the control descriptor sent by SCM_RIGHTS", std::move(scm_control), true);
    unique_fd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, peer.pid(), 0)));
    ASSERT_TRUE(pidfd);
    unique_fd fd(static_cast<int>(::syscall(SYS_pidfd_getfd, pidfd.get(), named_fd, 0)));
    ASSERT_TRUE(fd) << "pidfd_getfd(" << named_fd << "): " << std::strerror(errno);
    held.emplace_back("the descriptor the handle names, by pidfd_getfd", std::move(fd));
  }

  // Snapshots one descriptor's whole content and checks it reaches nothing outside the
  // exported object, then tries every way of writing and reshaping it. A data descriptor is
  // then mapped read-write for the write-back; the control descriptor must refuse them all.
  void snapshot_and_probe(target_kind k, taken& t) {
    SCOPED_TRACE(t.from);
    t.snapshot = read_all(t.fd.get());
    // Nothing outside the exported object: the data descriptors hold the object exactly (an
    // interior export's reaches the rest of its allocation, and no more), the control
    // descriptor one page of export table.
    if (t.control) {
      EXPECT_EQ(t.snapshot.size(), page());
    } else {
      EXPECT_EQ(t.snapshot.size(), object_bytes) << "the descriptor reaches beyond the exported object";
      if (k != target_kind::event) {
        EXPECT_TRUE(t.snapshot == pattern_bytes(kSeed, object_bytes)) << "the descriptor holds other bytes than the object's";
      }
    }
    EXPECT_FALSE(holds_decoy(t.snapshot, kDecoyBytes)) << "bytes of an allocation never exported are reachable";
    // Map it however the kernel allows: the data read-write (that is what importers do),
    // the control object not at all for writing.
    const std::vector<std::string> writes = writes_that_work(t.fd.get());
    const std::vector<std::string> reshapes = reshapes_that_work(t.fd.get());
    EXPECT_EQ(joined(reshapes), "none") << "an importer changed the object's size or seals";
    if (t.control) {
      EXPECT_EQ(joined(writes), "none") << "an importer can write the export table";
    } else {
      t.length = t.snapshot.size();
      t.writable = ::mmap(nullptr, t.length, PROT_READ | PROT_WRITE, MAP_SHARED, t.fd.get(), 0);
      ASSERT_NE(t.writable, MAP_FAILED) << std::strerror(errno);
      // writes_that_work changed a byte or punched the first page out: restore the content.
      ASSERT_EQ(::pwrite(t.fd.get(), t.snapshot.data(), t.snapshot.size(), 0), static_cast<ssize_t>(t.snapshot.size()));
    }
  }

  // The mapping the open made, page by page.
  void snapshot_mapping() {
    if (!map_start) return;
    mapping_snapshot.resize(map_end - map_start);
    std::memcpy(mapping_snapshot.data(), reinterpret_cast<const void*>(map_start), mapping_snapshot.size());
    EXPECT_FALSE(holds_decoy(mapping_snapshot, kDecoyBytes));
  }

  // Writes every snapshot back through everything writable, and signals the event (an
  // importer necessarily writes its futex page).
  void write_back() {
    for (taken& t : held) {
      const ssize_t n = ::pwrite(t.fd.get(), t.snapshot.data(), t.snapshot.size(), 0);
      if (t.control) {
        EXPECT_EQ(n, -1) << "the export table took a write";
      } else {
        EXPECT_EQ(n, static_cast<ssize_t>(t.snapshot.size())) << t.from << ": " << std::strerror(errno);
      }
      if (t.writable) std::memcpy(t.writable, t.snapshot.data(), t.length);
    }
    if (map_start) std::memcpy(reinterpret_cast<void*>(map_start), mapping_snapshot.data(), mapping_snapshot.size());
    if (opened_event) event_signal(opened_event.get());
  }
};

TEST_P(HostileImporter, rb_revoke_tamper) {
  const target_kind k = GetParam();
  const std::uint64_t decoy = peer.must(op::alloc, usm_device, kDecoyBytes, kDecoySeed).msg.a;

  unique_fd scm_data, scm_control;
  export_target(k, scm_data, scm_control);
  const record::fields rec = record::decode(bytes);

  ASSERT_NO_FATAL_FAILURE(open_honestly(k));
  ASSERT_NO_FATAL_FAILURE(take_descriptors(std::move(scm_data), std::move(scm_control), rec.fd));
  for (taken& t : held) ASSERT_NO_FATAL_FAILURE(snapshot_and_probe(k, t));
  snapshot_mapping();

  const int data_fd = held[0].fd.get(), control_fd = held[1].fd.get();
  put(k);
  write_back();
  expect_refused(k, "put", data_fd, control_fd);

  free_object(k);
  write_back();
  expect_refused(k, "free", data_fd, control_fd);

  peer.must(op::free, decoy);
}

INSTANTIATE_TEST_SUITE_P(Kinds, HostileImporter,
                         testing::Values(target_kind::memory, target_kind::physical, target_kind::event),
                         [](const auto& info) { return std::string(name_of(info.param)); });

// Another user: no ptrace access to the exporter, so neither pidfd_getfd nor a read of its
// export table. With both descriptors sent by SCM_RIGHTS it opens; it cannot write the
// control descriptor by any means; a put handle stays refused.
TEST(HostileOtherUser, rb_revoke_tamper_without_ptrace) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to start a peer as another user";
  constexpr uid_t kNobody = 65534;
  peer_options o;
  o.uid = kNobody;
  std::optional<peer_process> peer;
  try {
    peer.emplace(o);
  } catch (const std::exception& e) {
    GTEST_SKIP() << "cannot start a peer as uid " << kNobody << ": " << e.what();
  }
  context ctx;
  const device dev = ipc_device();
  constexpr std::size_t kBytes = 2 * 4096;
  usm_ptr a(malloc_device(kBytes, dev, ctx), ctx);
  fill_pattern(a.get(), kBytes, kSeed);
  handle h = mem::get(a.get(), ctx);
  ASSERT_GE(h.control_descriptor(), 0);

  // Without ptrace access: neither the descriptor nor the export table can be taken.
  const peer_reply taken = peer->call(op::mem_open, 0, 0, 0, h.data());
  EXPECT_EQ(taken.code(), errc::permission_denied) << taken.text();
  const peer_reply data_only = peer->call(op::mem_open, 0, 0, 0, h.data(), h.descriptor());
  EXPECT_EQ(data_only.code(), errc::permission_denied) << data_only.text();
  EXPECT_NE(data_only.text().find("control_descriptor"), std::string::npos) << data_only.text();

  // With both descriptors it opens and sees the data.
  peer->must(op::set_control, 0, 0, 0, {}, h.control_descriptor());
  const std::uint64_t there = peer->must(op::mem_open, 0, 0, 0, h.data(), h.descriptor()).msg.a;
  EXPECT_EQ(peer->must(op::verify, there, kBytes, kSeed).msg.a, UINT64_MAX);
  // No way of writing the control descriptor works.
  const peer_reply probe = peer->must(op::probe_control);
  EXPECT_EQ(probe.msg.a, 0u) << "ways that wrote the export table (bits of probe_control): " << probe.msg.a;
  EXPECT_EQ(probe.msg.b, 0x7fu);
  peer->must(op::mem_close, there);

  const record::bytes copy = [&] {
    record::bytes b{};
    std::copy(h.data().begin(), h.data().end(), b.begin());
    return b;
  }();
  const int data = ::fcntl(h.descriptor(), F_DUPFD_CLOEXEC, 0);
  unique_fd keep_data(data);
  mem::put(h, ctx);
  const peer_reply stale = peer->call(op::mem_open, 0, 0, 0, copy, data);
  EXPECT_EQ(stale.code(), errc::invalid) << stale.text();
}

}  // namespace
