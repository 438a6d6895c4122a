// libFuzzer target over ipcref's memory open path (ipc::memory::open), with the campaign's
// oracle: an open fails with ipcref::exception, or maps exactly one live export whose
// canary reads back in full, and close leaves no descriptor and no mapping behind.
// Anything else aborts (a libFuzzer crash, with the input saved).
//
// Live exporters: at start the target forks a helper that exports from another process
// (the pidfd_getfd path; it dies with the target, PR_SET_PDEATHSIG), and exports in this
// process too (the same-process path). Each side holds exports and decoys (allocations
// never exported) and one export put before fuzzing.
//
// Input: byte 0 picks the base export (bits 0..2: 0..3 in this process, 4..7 in the
// helper) and which fields are replaced by the base's live values before the open, so
// that saved inputs stay meaningful in a later process (bit 3: pid, guard kind and guard;
// bit 4: fd; bit 5: token; bit 6: size, offset and slot; bit 7: recompute the checksum).
// Bytes 1.. are the handle, of any length; bytes past the input are the base's.
//
// Seeds from real exports: IPCHECK_FUZZ_WRITE_SEEDS=DIR ref_open_fuzzer -runs=0 writes one
// seed per export (fuzz/corpus/ref/ holds the committed ones).
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "ipcheck/fuzz/canary.hpp"
#include "ipcheck/fuzz/layout.hpp"
#include "ipcheck/fuzz/oracle.hpp"
#include "ipcheck/fuzz/rng.hpp"
#include "ipcref/ipcref.hpp"

namespace {

using namespace ipcheck::fuzz;
namespace rec = ipcref::record;

constexpr int kSides = 2;          // this process, the helper
constexpr int kExportsPerSide = 4;
constexpr int kMaxAllocs = 8;

struct AllocPlan {
  std::size_t bytes;
  bool decoy;
  std::uint64_t export_offset;
  bool revoked;
};
// Exports and decoys interleaved, so that a descriptor one off an export's is a decoy.
constexpr AllocPlan kPlan[] = {
    {4096, false, 0, false},         {65536, true, 0, false},     {3 * 4096 + 123, false, 0, false},
    {65536, true, 0, false},         {65536, false, 4160, false},  // an interior pointer
    {4096, false, 0, true},
};
constexpr int kAllocs = static_cast<int>(std::size(kPlan));
static_assert(kAllocs <= kMaxAllocs);

// What one side publishes (the helper writes it into a shared page).
struct SideState {
  std::atomic<int> ready;
  int failed;
  rec::bytes exports[kExportsPerSide];  // in plan order: three live, the revoked one last
  std::uint64_t salts[kMaxAllocs];
};

struct Target {
  const HandleLayout* layout = nullptr;
  SideState* sides[kSides] = {};
  std::vector<CanaryAlloc> table;
  std::optional<ipcref::context> ctx;
  std::optional<ipcref::device> dev;
  pid_t helper = 0;
  std::vector<std::byte> scratch;
};

Target& target() {
  static Target t;
  return t;
}

std::uint64_t salt_of(int side, int alloc) { return derive_seed(0x1f00d + static_cast<std::uint64_t>(side), static_cast<std::uint64_t>(alloc)) & ~7ull; }

std::vector<ipcref::handle>& live_handles() {
  static std::vector<ipcref::handle> h;
  return h;
}

// Makes one side's allocations and exports; their objects live until the process ends.
void export_side(int side, SideState& out) {
  try {
    ipcref::context ctx;
    const ipcref::device dev = ipcref::get_devices().front();
    int e = 0;
    for (int a = 0; a < kAllocs; ++a) {
      const AllocPlan& p = kPlan[a];
      void* ptr = ipcref::malloc_device(p.bytes, dev, ctx);
      out.salts[a] = salt_of(side, a);
      fill_canary(out.salts[a], 0, {static_cast<std::byte*>(ptr), p.bytes});
      if (p.decoy) continue;
      ipcref::handle h = ipcref::ipc::memory::get(static_cast<char*>(ptr) + p.export_offset, ctx);
      std::memcpy(out.exports[e].data(), h.data().data(), rec::size);
      if (p.revoked) ipcref::ipc::memory::put(h, ctx);
      ++e;
      live_handles().push_back(std::move(h));  // the export stays live for the process's life
    }
  } catch (const ipcref::exception& x) {
    std::fprintf(stderr, "ref_open_fuzzer: side %d cannot export: %s\n", side, x.what());
    out.failed = 1;
  }
  out.ready.store(1);
}

void stop_helper() {
  Target& t = target();
  if (t.helper > 0) {
    ::kill(t.helper, SIGKILL);
    int st;
    ::waitpid(t.helper, &st, 0);
    t.helper = 0;
  }
}

void add_side_to_table(int side) {
  Target& t = target();
  for (int a = 0; a < kAllocs; ++a) {
    const AllocPlan& p = kPlan[a];
    CanaryAlloc c;
    c.name = std::string(side ? "helper" : "self") + ".alloc[" + std::to_string(a) + "]";
    c.salt = t.sides[side]->salts[a];
    c.size = p.bytes;
    c.decoy = p.decoy;
    if (!p.decoy) (p.revoked ? c.revoked : c.live).push_back(Range{p.export_offset, p.bytes - p.export_offset});
    t.table.push_back(c);
  }
}

void write_seeds(const char* dir) {
  Target& t = target();
  for (int i = 0; i < kSides * kExportsPerSide; ++i) {
    const rec::bytes& b = t.sides[i / kExportsPerSide]->exports[i % kExportsPerSide];
    for (const std::uint8_t relink : {std::uint8_t{0xf8}, std::uint8_t{0x00}}) {
      const std::string path = std::string(dir) + "/export" + std::to_string(i) + (relink ? "-relinked" : "-raw");
      if (FILE* f = std::fopen(path.c_str(), "wb")) {
        const std::uint8_t sel = static_cast<std::uint8_t>(i | relink);
        std::fwrite(&sel, 1, 1, f);
        std::fwrite(b.data(), 1, b.size(), f);
        std::fclose(f);
      }
    }
  }
}

class LocalReader final : public MemoryReader {
 public:
  bool read(std::uint64_t address, std::span<std::byte> out) override {
    if (out.empty()) return true;
    if (!host_mapped(address) || !host_mapped(address + out.size() - 1)) return false;
    std::memcpy(out.data(), reinterpret_cast<const void*>(address), out.size());
    return true;
  }
};

[[noreturn]] void finding(const char* kind, const std::string& detail) {
  std::fprintf(stderr, "ref_open_fuzzer: FINDING %s: %s\n", kind, detail.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  Target& t = target();
  t.layout = &layout_for("ipcref/1", rec::size);
  void* shared = ::mmap(nullptr, 2 * sizeof(SideState), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (shared == MAP_FAILED) {
    std::perror("ref_open_fuzzer: mmap");
    std::exit(1);
  }
  t.sides[0] = static_cast<SideState*>(shared);
  t.sides[1] = t.sides[0] + 1;
  // The helper first, before this process holds any ipcref state it would inherit. A fork
  // without exec, outside the supervisor: libFuzzer runs in this one process, and the helper
  // only exports through ipcref (no GPU runtime is ever loaded here).
  const pid_t parent = ::getpid();
  t.helper = ::fork();
  if (t.helper == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(0);
    export_side(1, *t.sides[1]);
    for (;;) ::pause();
  }
  if (t.helper < 0) {
    std::perror("ref_open_fuzzer: fork");
    std::exit(1);
  }
  std::atexit(stop_helper);
  export_side(0, *t.sides[0]);
  for (int i = 0; i < 10000 && !t.sides[1]->ready.load(); ++i) ::usleep(1000);
  if (!t.sides[1]->ready.load() || t.sides[0]->failed || t.sides[1]->failed) {
    std::fprintf(stderr, "ref_open_fuzzer: the exporters did not start\n");
    std::exit(1);
  }
  add_side_to_table(0);
  add_side_to_table(1);
  t.ctx.emplace();
  t.dev.emplace(ipcref::get_devices().front());
  if (const char* dir = std::getenv("IPCHECK_FUZZ_WRITE_SEEDS")) write_seeds(dir);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  Target& t = target();
  const HandleLayout& l = *t.layout;
  const std::uint8_t sel = data[0];
  const rec::bytes& base = t.sides[(sel & 7) / kExportsPerSide]->exports[(sel & 7) % kExportsPerSide];
  std::array<std::byte, 256> buf{};
  std::memcpy(buf.data(), base.data(), base.size());
  const std::size_t len = std::min(size - 1, buf.size());
  std::memcpy(buf.data(), data + 1, len);
  auto relink = [&](std::initializer_list<FieldRole> roles) {
    for (FieldRole r : roles) l.set(buf, l.find(r), l.get(base, l.find(r)));
  };
  if (sel & 0x08) relink({FieldRole::pid, FieldRole::guard_kind, FieldRole::guard});
  if (sel & 0x10) relink({FieldRole::fd});
  if (sel & 0x20) relink({FieldRole::token});
  if (sel & 0x40) relink({FieldRole::size, FieldRole::offset, FieldRole::slot});
  if (sel & 0x80) l.reseal(buf);
  const std::span<const std::byte> handle(buf.data(), len);

  const int fd_floor = lowest_free_fd();
  const std::size_t mappings = ipcref::get_resource_counts().open_mappings;
  void* p = nullptr;
  try {
    p = ipcref::ipc::memory::open(handle, *t.ctx, *t.dev);
  } catch (const ipcref::exception&) {
    // A clean refusal.
  }
  if (p) {
    const auto addr = reinterpret_cast<std::uint64_t>(p);
    std::optional<std::uint64_t> claimed;
    if (len >= l.size) claimed = l.get(buf, l.find(FieldRole::size));
    LocalReader reader;
    const Judgement j = judge_mapping(t.table, addr, claimed, reader, t.scratch);
    if (is_finding(j.verdict)) finding(verdict_name(j.verdict), j.detail);
    try {
      ipcref::ipc::memory::close(p, *t.ctx);
    } catch (const ipcref::exception& e) {
      finding("close_failed", e.what());
    }
    if (host_mapped(addr)) finding("mapping_leak", "the mapping is still there after close");
  }
  if (ipcref::get_resource_counts().open_mappings != mappings)
    finding("mapping_leak", "ipcref counts " + std::to_string(ipcref::get_resource_counts().open_mappings) +
                                " open mappings, " + std::to_string(mappings) + " before the open");
  if (lowest_free_fd() != fd_floor) finding("fd_leak", "descriptor " + std::to_string(fd_floor) + " was left open");
  return 0;
}
