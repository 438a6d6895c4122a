// libFuzzer target over the Unified Memory Framework's IPC open path (umfOpenIPCHandle, then
// umfCloseIPCHandle): the pinned UMF built with AddressSanitizer, UndefinedBehaviorSanitizer
// and coverage instrumentation (ci/umf-fuzz-stack), its Level Zero provider over our driver
// libze_ipcheck through the Level Zero loader 1.32 (ci/ur-stack). A crash, a hang or a
// sanitizer report anywhere in the process (UMF, the loader, our driver, this target) is a
// libFuzzer crash with its input saved.
//
// Live exporters: at start the target forks a helper that exports through UMF from another
// process (UMF's provider takes the descriptor with pidfd_getfd; the helper dies with the
// target, PR_SET_PDEATHSIG), and exports in this process too. Each side allocates from a UMF
// proxy pool (one provider allocation per allocation, so an unchanged handle names exactly one
// allocation) exports and decoys (allocations never exported) interleaved, one export of an
// interior pointer, and one export put before fuzzing; every allocation holds its own canary.
//
// Input: byte 0 picks the base export (bits 0..2: 0..3 in this process, 4..7 in the helper)
// and which fields are replaced by the base's live values before the open, so that saved
// inputs stay meaningful in a later process (bit 3: both pids; bit 4: the Level Zero handle,
// the exporter's descriptor and our driver's record naming the export (pid, guard, token); bit 5:
// handle_id; bit 6: base, base size, offset and the provider's size), and bit 7 opens the
// bytes twice before the closes (UMF's cache of opened handles). Bytes 1.. are the handle
// (UMF's header, then the Level Zero provider's data: layout ur-umf-l0-v2/1, 120 bytes); bytes
// past the input are the base's. The handle is passed in a heap buffer of exactly its size,
// so a read past it is an AddressSanitizer report.
//
// A pid field that names a live process other than this one and the helper is not opened
// (UMF would take that process's descriptor with pidfd_getfd): such inputs are counted as
// `foreign_pid` and skipped, so the fuzzer never touches another program.
//
// The oracle: every successful open's mapping is judged as the campaign does
// (ipcheck::fuzz::judge_mapping: exactly one live export, its canary intact for the size the
// handle claims from the returned pointer, base_size - offset), then closed, and the close
// checked (a failed close, a mapping still there, a descriptor left open; a failed close is
// retried at the pointer less the header's offset, where UMF mapped). Those verdicts are
// UMF's known findings (reports/findings/ur-578c2a84/: stale handles, the trusted header, the
// cache that keeps mappings), so by default they are counted, not fatal: the summary line at
// exit gives each count. IPCHECK_UMF_FUZZ_ABORT=kind[,kind...] (or `all`) makes those kinds
// abort, as libFuzzer crashes with the input saved.
//
// Seeds from real exports: IPCHECK_FUZZ_WRITE_SEEDS=DIR umf_open_fuzzer -runs=0 writes one
// seed per export (fuzz/corpus/umf/ holds the committed ones).
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cerrno>
#include <cstring>
#include <initializer_list>
#include <string>
#include <vector>

#include <level_zero/ze_api.h>
#include <umf/ipc.h>
#include <umf/memory_pool.h>
#include <umf/memory_provider.h>
#include <umf/pools/pool_proxy.h>
#include <umf/providers/provider_level_zero.h>

#include "ipcheck/fuzz/canary.hpp"
#include "ipcheck/fuzz/oracle.hpp"
#include "ipcheck/handle_layout.hpp"

namespace {

using namespace ipcheck::fuzz;
using ipcheck::FieldRole;
using ipcheck::HandleLayout;

constexpr int kSides = 2;  // this process, the helper
constexpr int kExportsPerSide = 4;
constexpr int kMaxAllocs = 8;
constexpr std::size_t kHandleBytes = 120;  // UMF's header (40) + the L0 provider's data (80)
constexpr std::size_t kZeHandleAt = 56;    // the provider's ze_ipc_mem_handle_t (64 bytes)

struct AllocPlan {
  std::size_t bytes;
  bool decoy;
  std::uint64_t export_offset;
  bool revoked;
};
// Exports and decoys interleaved, so that a neighbour of an export is a decoy.
constexpr AllocPlan kPlan[] = {
    {4096, false, 0, false},  {65536, true, 0, false},     {3 * 4096 + 123, false, 0, false},
    {65536, true, 0, false},  {65536, false, 4160, false},  // an interior pointer
    {4096, false, 0, true},
};
constexpr int kAllocs = static_cast<int>(std::size(kPlan));
static_assert(kAllocs <= kMaxAllocs);

// What one side publishes (the helper writes it into a shared page).
struct SideState {
  std::atomic<int> ready;
  int failed;
  std::array<std::byte, kHandleBytes> exports[kExportsPerSide];  // plan order: three live, the put one last
  std::uint64_t salts[kMaxAllocs];
  char error[256];
};

struct Ze {
  ze_driver_handle_t driver = nullptr;
  ze_device_handle_t device = nullptr;
  ze_context_handle_t context = nullptr;
  umf_memory_pool_handle_t pool = nullptr;
};

struct Target {
  const HandleLayout* layout = nullptr;
  SideState* sides[kSides] = {};
  std::vector<CanaryAlloc> table;
  Ze ze;
  umf_ipc_handler_handle_t handler = nullptr;
  pid_t self = 0;
  pid_t helper = 0;
  std::vector<std::byte> scratch;
  std::string abort_kinds;
  std::array<unsigned long long, kVerdictCount> verdicts{};
  unsigned long long opens = 0, open_errors = 0, foreign_pid = 0;
  unsigned long long closed_at_base = 0, unreleasable = 0;  // failed closes: retried at pointer - offset
  unsigned long long executions = 0, next_map_check = 0;    // the mapping budget: end_round_if_maps_run_out
  std::size_t map_budget = 0;
};

Target& target() {
  static Target t;
  return t;
}

std::uint64_t salt_of(int side, int alloc) {
  return (0x5a17c0de00000000ull ^ (static_cast<std::uint64_t>(side) << 40) ^ (static_cast<std::uint64_t>(alloc) << 32) ^
          0x9e3779b97f4a7c15ull * static_cast<std::uint64_t>(side * 8 + alloc + 1)) &
         ~7ull;
}

// zeInit through the loader (our driver: ZE_ENABLE_ALT_DRIVERS), a context on the first
// device, and a UMF proxy pool over the Level Zero provider on it.
bool open_ze(Ze& z, std::string& err) {
  if (zeInit(0) != ZE_RESULT_SUCCESS) return err = "zeInit failed (is ZE_ENABLE_ALT_DRIVERS set to libze_ipcheck?)", false;
  uint32_t n = 1;
  if (zeDriverGet(&n, &z.driver) != ZE_RESULT_SUCCESS || n == 0) return err = "zeDriverGet found no driver", false;
  n = 1;
  if (zeDeviceGet(z.driver, &n, &z.device) != ZE_RESULT_SUCCESS || n == 0) return err = "zeDeviceGet found no device", false;
  ze_context_desc_t cd{ZE_STRUCTURE_TYPE_CONTEXT_DESC, nullptr, 0};
  if (zeContextCreate(z.driver, &cd, &z.context) != ZE_RESULT_SUCCESS) return err = "zeContextCreate failed", false;
  umf_level_zero_memory_provider_params_handle_t params = nullptr;
  if (umfLevelZeroMemoryProviderParamsCreate(&params) != UMF_RESULT_SUCCESS) return err = "umfLevelZeroMemoryProviderParamsCreate failed", false;
  umfLevelZeroMemoryProviderParamsSetContext(params, z.context);
  umfLevelZeroMemoryProviderParamsSetDevice(params, z.device);
  umfLevelZeroMemoryProviderParamsSetMemoryType(params, UMF_MEMORY_TYPE_DEVICE);
  umf_memory_provider_handle_t provider = nullptr;
  const umf_result_t r = umfMemoryProviderCreate(umfLevelZeroMemoryProviderOps(), params, &provider);
  umfLevelZeroMemoryProviderParamsDestroy(params);
  if (r != UMF_RESULT_SUCCESS) return err = "umfMemoryProviderCreate (Level Zero) failed: " + std::to_string(r), false;
  if (umfPoolCreate(umfProxyPoolOps(), provider, nullptr, UMF_POOL_CREATE_FLAG_OWN_PROVIDER, &z.pool) != UMF_RESULT_SUCCESS)
    return err = "umfPoolCreate (proxy) failed", false;
  return true;
}

// Makes one side's allocations and exports; they live until the process ends.
void export_side(int side, SideState& out) {
  Ze z;
  std::string err;
  if (!open_ze(z, err)) {
    std::snprintf(out.error, sizeof out.error, "%s", err.c_str());
    out.failed = 1;
    out.ready.store(1);
    return;
  }
  int e = 0;
  for (int a = 0; a < kAllocs && !out.failed; ++a) {
    const AllocPlan& p = kPlan[a];
    void* ptr = umfPoolMalloc(z.pool, p.bytes);
    if (!ptr) {
      std::snprintf(out.error, sizeof out.error, "umfPoolMalloc(%zu) failed", p.bytes);
      out.failed = 1;
      break;
    }
    out.salts[a] = salt_of(side, a);
    fill_canary(out.salts[a], 0, {static_cast<std::byte*>(ptr), p.bytes});
    if (p.decoy) continue;
    umf_ipc_handle_t h = nullptr;
    size_t size = 0;
    if (umfGetIPCHandle(static_cast<char*>(ptr) + p.export_offset, &h, &size) != UMF_RESULT_SUCCESS || size != kHandleBytes) {
      std::snprintf(out.error, sizeof out.error, "umfGetIPCHandle failed (or gave %zu bytes, not %zu)", size, kHandleBytes);
      out.failed = 1;
      break;
    }
    std::memcpy(out.exports[e].data(), h, kHandleBytes);
    if (p.revoked) umfPutIPCHandle(h);  // a stale handle; the others stay live for the process's life
    ++e;
  }
  if (side == 0) target().ze = z;
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

void print_summary() {
  const Target& t = target();
  std::string s;
  for (int v = 0; v < kVerdictCount; ++v)
    if (t.verdicts[v]) s += std::string(s.empty() ? "" : ", ") + verdict_name(static_cast<Verdict>(v)) + " " + std::to_string(t.verdicts[v]);
  std::fprintf(stderr,
               "umf_open_fuzzer: %llu executions, %llu opens (%llu refused; %llu inputs naming a foreign pid skipped): %s; "
               "of the failed closes %llu released at pointer - offset, %llu not\n",
               t.executions, t.opens, t.open_errors, t.foreign_pid, s.empty() ? "none succeeded" : s.c_str(), t.closed_at_base,
               t.unreleasable);
}

// At a normal exit (libFuzzer's end of the run): the summary, the helper, then this process's
// pool (UMF's teardown checks that no pool left entries in its cache of opened handles).
void at_exit() {
  print_summary();
  stop_helper();
  Target& t = target();
  if (t.ze.pool) umfPoolDestroy(t.ze.pool);
  t.ze.pool = nullptr;
}

// The process's mappings, one line each of /proc/self/maps (-1 when it cannot be read).
long mappings_in_use() {
  const int fd = ::open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  long lines = 0;
  char buf[1 << 16];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) != 0;) {
    if (n < 0) {
      if (errno == EINTR) continue;
      lines = -1;
      break;
    }
    for (ssize_t i = 0; i < n; ++i) lines += buf[i] == '\n';
  }
  ::close(fd);
  return lines;
}

long max_map_count() {
  long v = 0;
  if (FILE* f = std::fopen("/proc/sys/vm/max_map_count", "re")) {
    if (std::fscanf(f, "%ld", &v) != 1) v = 0;
    std::fclose(f);
  }
  return v > 0 ? v : 65530;
}

// UMF keeps the mappings of some forged handles for the process's life (umf-fuzz.md: ~65,000
// exhaust vm.max_map_count, and then the sanitizer's own mmap fails and the process dies
// "ERROR: Failed to mmap", which would be a crash of ours, not UMF's finding). So the round
// ends, cleanly and saying why, once half the limit is in use (or IPCHECK_UMF_FUZZ_MAPS); run_umf_fuzz.sh starts the
// next round in a fresh process over the same corpus. The next look is as many executions
// away as the budget left could take at 8 mappings each (at most 2 opens per input), so the
// reading of a long /proc/self/maps stays rare.
void end_round_if_maps_run_out() {
  Target& t = target();
  if (++t.executions < t.next_map_check) return;
  const long in_use = mappings_in_use();
  if (in_use < 0) {
    t.next_map_check = ~0ull;  // no /proc: nothing to watch
    return;
  }
  const long budget = static_cast<long>(t.map_budget);
  if (in_use < budget) {
    t.next_map_check = t.executions + std::max(16L, (budget - in_use) / 8);
    return;
  }
  std::fprintf(stderr,
               "umf_open_fuzzer: the round ends after %llu executions: %ld mappings in use, the budget %ld of "
               "vm.max_map_count %ld (UMF keeps the mappings of forged handles: umf-fuzz.md); a fresh process goes on\n",
               t.executions, in_use, budget, max_map_count());
  std::fflush(stderr);
  print_summary();
  stop_helper();
  std::_Exit(0);  // libFuzzer takes exit() inside an input for the target's failure
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
    const auto& b = t.sides[i / kExportsPerSide]->exports[i % kExportsPerSide];
    for (const std::uint8_t relink : {std::uint8_t{0x78}, std::uint8_t{0x00}}) {
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

// Reads what an open returned with process_vm_readv on this process: a pointer that UMF put
// outside its mapping (a forged offset: open-trusts-header.md) may land in memory that is mapped
// but AddressSanitizer's (this process's heap, poisoned), and reading it must be the oracle's
// verdict, never a sanitizer report of this target's own; an unmapped page is a failed read.
class LocalReader final : public MemoryReader {
 public:
  bool read(std::uint64_t address, std::span<std::byte> out) override {
    if (out.empty()) return true;
    iovec local{out.data(), out.size()};
    iovec remote{reinterpret_cast<void*>(address), out.size()};
    return ::process_vm_readv(::getpid(), &local, 1, &remote, 1, 0) == static_cast<ssize_t>(out.size());
  }
};

// Counts a verdict; aborts when IPCHECK_UMF_FUZZ_ABORT names its kind (or says `all`).
void verdict(Verdict v, const std::string& detail) {
  Target& t = target();
  ++t.verdicts[static_cast<int>(v)];
  if (!is_finding(v)) return;
  const std::string kind = verdict_name(v);
  const std::string& k = t.abort_kinds;
  if (k == "all" || ("," + k + ",").find("," + kind + ",") != std::string::npos) {
    std::fprintf(stderr, "umf_open_fuzzer: FINDING %s: %s\n", kind.c_str(), detail.c_str());
    print_summary();
    std::abort();
  }
}

bool foreign_pid(std::uint64_t pid) {
  const Target& t = target();
  const auto p = static_cast<pid_t>(static_cast<std::uint32_t>(pid));
  if (p == t.self || p == t.helper || p <= 0) return false;
  return ::kill(p, 0) == 0 || errno == EPERM;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  Target& t = target();
  t.layout = &ipcheck::layout_for("ur-umf-l0-v2/1", kHandleBytes);
  if (const char* k = std::getenv("IPCHECK_UMF_FUZZ_ABORT")) t.abort_kinds = k;
  // A bounded cache of opened handles, so that a long run reaches UMF's eviction and does not
  // grow without end (UMF's default is unbounded: close-keeps-mapping.md).
  ::setenv("UMF_MAX_OPENED_IPC_HANDLES", "64", 0);
  void* shared = ::mmap(nullptr, 2 * sizeof(SideState), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (shared == MAP_FAILED) {
    std::perror("umf_open_fuzzer: mmap");
    std::exit(1);
  }
  t.sides[0] = static_cast<SideState*>(shared);
  t.sides[1] = t.sides[0] + 1;
  // The helper first, before this process initialises Level Zero or UMF (nothing of theirs is
  // inherited): it exports through its own loader, driver and UMF.
  t.self = ::getpid();
  t.helper = ::fork();
  if (t.helper == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != t.self) ::_exit(0);
    export_side(1, *t.sides[1]);
    for (;;) ::pause();
  }
  if (t.helper < 0) {
    std::perror("umf_open_fuzzer: fork");
    std::exit(1);
  }
  std::atexit(at_exit);
  export_side(0, *t.sides[0]);
  for (int i = 0; i < 20000 && !t.sides[1]->ready.load(); ++i) ::usleep(1000);
  for (int s = 0; s < kSides; ++s)
    if (!t.sides[s]->ready.load() || t.sides[s]->failed) {
      std::fprintf(stderr, "umf_open_fuzzer: the exporter in %s did not start: %s\n", s ? "the helper" : "this process",
                   t.sides[s]->ready.load() ? t.sides[s]->error : "no answer in 20 s");
      std::exit(1);
    }
  add_side_to_table(0);
  add_side_to_table(1);
  if (umfPoolGetIPCHandler(t.ze.pool, &t.handler) != UMF_RESULT_SUCCESS) {
    std::fprintf(stderr, "umf_open_fuzzer: umfPoolGetIPCHandler failed\n");
    std::exit(1);
  }
  // IPCHECK_UMF_FUZZ_MAPS=+N: a budget of N mappings above those in use now (the test
  // umf-fuzz:oracle.map_budget proves the clean end with it).
  const char* maps = std::getenv("IPCHECK_UMF_FUZZ_MAPS");
  if (maps && maps[0] == '+' && std::atol(maps + 1) > 0)
    t.map_budget = static_cast<std::size_t>(std::max(0L, mappings_in_use()) + std::atol(maps + 1));
  else
    t.map_budget = static_cast<std::size_t>(max_map_count() / 2);
  if (const char* dir = std::getenv("IPCHECK_FUZZ_WRITE_SEEDS")) write_seeds(dir);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  Target& t = target();
  const HandleLayout& l = *t.layout;
  const std::uint8_t sel = data[0];
  const auto& base = t.sides[(sel & 7) / kExportsPerSide]->exports[(sel & 7) % kExportsPerSide];
  std::array<std::byte, kHandleBytes> buf = base;
  std::memcpy(buf.data(), data + 1, std::min(size - 1, buf.size()));
  auto relink = [&](std::initializer_list<const char*> names) {
    for (const char* n : names) l.set(buf, l.find(n), l.get(base, l.find(n)));
  };
  if (sel & 0x08) relink({"umf.pid", "provider.pid"});
  if (sel & 0x10) std::memcpy(buf.data() + kZeHandleAt, base.data() + kZeHandleAt, kHandleBytes - kZeHandleAt);
  if (sel & 0x20) relink({"umf.handle_id"});
  if (sel & 0x40) relink({"umf.base", "umf.base_size", "umf.offset", "provider.size"});
  if (foreign_pid(l.get(buf, l.find("umf.pid"))) || foreign_pid(l.get(buf, l.find("provider.pid")))) {
    ++t.foreign_pid;
    return 0;
  }
  // Exactly the handle's bytes on the heap: a read past them is an AddressSanitizer report.
  auto* handle = static_cast<std::byte*>(std::malloc(kHandleBytes));
  std::memcpy(handle, buf.data(), kHandleBytes);

  const int fd_floor = lowest_free_fd();
  const int opens = (sel & 0x80) ? 2 : 1;
  void* ptrs[2] = {};
  for (int i = 0; i < opens; ++i) {
    ++t.opens;
    if (umfOpenIPCHandle(t.handler, reinterpret_cast<umf_ipc_handle_t>(handle), &ptrs[i]) != UMF_RESULT_SUCCESS || !ptrs[i]) {
      ++t.open_errors;
      if (ptrs[i]) verdict(Verdict::unreadable_mapping, "umfOpenIPCHandle failed but wrote a pointer");
      ptrs[i] = nullptr;
      continue;
    }
    // The bytes the handle claims from the returned pointer: the base allocation's size past
    // the offset.
    const std::uint64_t base_size = l.get(buf, l.find("umf.base_size"));
    const std::uint64_t at = l.get(buf, l.find("umf.offset"));
    const std::uint64_t claimed = at <= base_size ? base_size - at : base_size;
    LocalReader reader;
    const Judgement j = judge_mapping(t.table, reinterpret_cast<std::uint64_t>(ptrs[i]), claimed, reader, t.scratch);
    verdict(j.verdict, j.detail);
  }
  // UMF returns its mapping plus the header's offset unchecked (open-trusts-header.md): with a
  // forged offset the pointer lies outside the mapping, its close fails, and nothing can
  // release the mapping after, so each such open would leak one for the process's life and
  // ~65,000 of them exhaust vm.max_map_count (umf-fuzz.md). A failed close is counted, then
  // retried at the pointer less the offset, where UMF mapped, to keep the process fuzzing.
  const std::uint64_t offset = l.get(buf, l.find("umf.offset"));
  for (int i = 0; i < opens; ++i) {
    if (!ptrs[i]) continue;
    if (umfCloseIPCHandle(ptrs[i]) == UMF_RESULT_SUCCESS) continue;
    verdict(Verdict::close_failed, "umfCloseIPCHandle of the pointer umfOpenIPCHandle returned failed");
    if (offset && umfCloseIPCHandle(reinterpret_cast<void*>(reinterpret_cast<std::uintptr_t>(ptrs[i]) - offset)) == UMF_RESULT_SUCCESS)
      ++t.closed_at_base;
    else
      ++t.unreleasable;
  }
  // UMF keeps a closed mapping in its cache until eviction (close-keeps-mapping.md): a mapping
  // still there after the last close is counted as UMF's mapping_leak.
  for (int i = 0; i < opens; ++i)
    if (ptrs[i] && (i == 0 || ptrs[i] != ptrs[0]) && host_mapped(reinterpret_cast<std::uint64_t>(ptrs[i])))
      verdict(Verdict::mapping_leak, "the mapping is still there after umfCloseIPCHandle");
  if (lowest_free_fd() != fd_floor) verdict(Verdict::fd_leak, "descriptor " + std::to_string(fd_floor) + " was left open");
  std::free(handle);
  end_round_if_maps_run_out();
  return 0;
}
