// ipcheck-bench-ur-floor: what Unified Runtime's IPC open costs by itself, with nothing of
// ipcheck around it: the floor a `ur` fuzz campaign is held against.
//
//   ipcheck-bench-ur-floor --loader PATH [--backend cuda|level_zero] [--seconds S]
//
// A producer process (forked before anything is initialised) allocates 4 KiB of device USM
// through UR and exports it (urIPCGetMemHandleExp); the consumer, this process, opens through
// UR in a context of its own, with no oracle and no checks, in three phases of S seconds each
// (default 2), in this order:
//   reject_size      the real bytes with a size one short: UR's own argument check refuses
//                    (no UMF, no driver): the loader and adapter layer alone;
//   reject_provider  the real UMF header with the provider's bytes (past UMF's 40-byte
//                    header) inverted: UMF looks the handle up and the driver refuses it: the
//                    path of most of a campaign's rejects. Before any valid open, so that no
//                    entry of UMF's cache of opened handles answers instead;
//   open_close       the real handle opened and closed again and again.
// Prints one JSON line: the backend, then per phase the calls made, their median and their
// 90th percentile in microseconds, and the results the calls returned (UR's name: count).
// A call that does not return within 5 s ends the program (exit 3), naming the phase.
// Exit status: 0 measured, 1 a UR call of the set-up failed (named on stderr), 2 usage,
// 3 a call hung, 77 no device of that backend (no GPU, or no UR adapter for it).
#include <dlfcn.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "ipcheck/ur/ur_api.hpp"

namespace {

using namespace ipcheck::ur_api;

constexpr std::size_t kUmfHeader = 40;  // UMF's umf_ipc_data_t before the provider's bytes
constexpr std::size_t kMaxHandle = 512;

struct Api {
#define IPCHECK_UR_FIELD(name, params) PFN_##name name = nullptr;
  IPCHECK_UR_FUNCTIONS(IPCHECK_UR_FIELD)
#undef IPCHECK_UR_FIELD
};

[[noreturn]] void die(int code, const std::string& what) {
  std::fprintf(stderr, "ipcheck-bench-ur-floor: %s\n", what.c_str());
  std::exit(code);
}

void load(Api& api, const std::string& path) {
  void* lib = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) die(77, "cannot load the UR loader '" + path + "': " + ::dlerror() + " (give --loader PATH/libur_loader.so.0)");
#define IPCHECK_UR_LOOKUP(name, params) api.name = reinterpret_cast<PFN_##name>(::dlsym(lib, #name));
  IPCHECK_UR_FUNCTIONS(IPCHECK_UR_LOOKUP)
#undef IPCHECK_UR_LOOKUP
  if (!api.urLoaderInit || !api.urIPCOpenMemHandleExp || !api.urIPCGetMemHandleExp)
    die(77, "'" + path + "' has no urIPC*MemHandleExp entry points (not a UR loader with IPC)");
}

void check(ur_result_t r, const char* call) {
  if (r != UR_RESULT_SUCCESS) die(1, std::string(call) + " failed: UR result " + std::to_string(static_cast<int>(r)));
}

struct Runtime {
  ur_device_handle_t device = nullptr;
  ur_context_handle_t context = nullptr;
};

// urLoaderInit, the first adapter of `backend` with a device, its first device, a context.
Runtime open_runtime(Api& api, ur_backend_t backend) {
  check(api.urLoaderInit(0, nullptr), "urLoaderInit");
  std::uint32_t na = 0;
  check(api.urAdapterGet(0, nullptr, &na), "urAdapterGet");
  std::vector<ur_adapter_handle_t> adapters(na);
  if (na) check(api.urAdapterGet(na, adapters.data(), &na), "urAdapterGet");
  for (ur_adapter_handle_t a : adapters) {
    ur_backend_t b = UR_BACKEND_UNKNOWN;
    if (api.urAdapterGetInfo(a, UR_ADAPTER_INFO_BACKEND, sizeof b, &b, nullptr) != UR_RESULT_SUCCESS || b != backend)
      continue;
    std::uint32_t np = 0;
    if (api.urPlatformGet(a, 0, nullptr, &np) != UR_RESULT_SUCCESS || np == 0) continue;
    std::vector<ur_platform_handle_t> platforms(np);
    if (api.urPlatformGet(a, np, platforms.data(), &np) != UR_RESULT_SUCCESS) continue;
    for (ur_platform_handle_t p : platforms) {
      std::uint32_t nd = 0;
      Runtime rt;
      if (api.urDeviceGet(p, UR_DEVICE_TYPE_ALL, 1, &rt.device, &nd) != UR_RESULT_SUCCESS || nd == 0) continue;
      check(api.urContextCreate(1, &rt.device, nullptr, &rt.context), "urContextCreate");
      return rt;
    }
  }
  die(77, "no UR adapter with a device of the backend asked for (" + std::string(backend == UR_BACKEND_CUDA ? "cuda" : "level_zero") + ")");
}

struct Shared {
  std::atomic<int> state;  // 0 starting, 1 exported, 2 failed
  std::size_t size;
  unsigned char bytes[kMaxHandle];
  char error[256];
};

void producer(Api& api, ur_backend_t backend, Shared& s) {
  Runtime rt = open_runtime(api, backend);
  void* ptr = nullptr;
  ur_usm_desc_t desc{UR_STRUCTURE_TYPE_USM_DESC, nullptr, 0, 0};
  if (api.urUSMDeviceAlloc(rt.context, rt.device, &desc, nullptr, 4096, &ptr) != UR_RESULT_SUCCESS) {
    std::snprintf(s.error, sizeof s.error, "urUSMDeviceAlloc of 4096 bytes failed");
    s.state = 2;
    return;
  }
  void* data = nullptr;
  std::size_t size = 0;
  if (api.urIPCGetMemHandleExp(rt.context, ptr, &data, &size) != UR_RESULT_SUCCESS || size > kMaxHandle || size <= kUmfHeader) {
    std::snprintf(s.error, sizeof s.error, "urIPCGetMemHandleExp failed (or a handle of %zu bytes)", size);
    s.state = 2;
    return;
  }
  std::memcpy(s.bytes, data, size);
  s.size = size;
  s.state = 1;
  for (;;) ::pause();  // the export lives until the consumer kills this process
}

double now_us() {
  timespec t;
  ::clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

const char* g_phase = "set-up";
void on_alarm(int) {
  const char* a = "ipcheck-bench-ur-floor: a call of phase ";
  (void)!::write(2, a, std::strlen(a));
  (void)!::write(2, g_phase, std::strlen(g_phase));
  const char* b = " did not return within 5 s\n";
  (void)!::write(2, b, std::strlen(b));
  ::_exit(3);
}

struct Phase {
  std::string name;
  std::vector<double> us;
  std::map<int, long> results;
};

std::string result_name(int r) {
  switch (r) {
#define IPCHECK_UR_RESULT_CASE(name, value) \
  case value: return #name;
    IPCHECK_UR_RESULTS(IPCHECK_UR_RESULT_CASE)
#undef IPCHECK_UR_RESULT_CASE
  }
  return std::to_string(r);
}

std::string json(const Phase& p) {
  std::vector<double> v = p.us;
  std::sort(v.begin(), v.end());
  auto at = [&](double q) { return v.empty() ? 0.0 : v[static_cast<std::size_t>(q * (v.size() - 1))]; };
  std::string r;
  for (const auto& [code, n] : p.results) r += (r.empty() ? "" : ",") + ("\"" + result_name(code) + "\":" + std::to_string(n));
  char buf[256];
  std::snprintf(buf, sizeof buf, "\"%s\":{\"calls\":%zu,\"median_us\":%.2f,\"p90_us\":%.2f,\"results\":{", p.name.c_str(),
                v.size(), at(0.5), at(0.9));
  return buf + r + "}}";
}

}  // namespace

int main(int argc, char** argv) {
  std::string loader, backend_name = "cuda";
  double seconds = 2;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) die(2, a + " needs a value");
      return argv[++i];
    };
    if (a == "--loader") loader = value();
    else if (a == "--backend") backend_name = value();
    else if (a == "--seconds") {
      const std::string v = value();
      char* end = nullptr;
      seconds = std::strtod(v.c_str(), &end);
      if (!end || *end || !(seconds > 0 && seconds <= 600)) die(2, "--seconds '" + v + "' is not a number of seconds from 0 to 600");
    } else
      die(2, "unknown argument '" + a + "' (usage: ipcheck-bench-ur-floor --loader PATH [--backend cuda|level_zero] [--seconds S])");
  }
  if (loader.empty()) die(2, "--loader PATH (the UR loader, libur_loader.so.0) is needed");
  ur_backend_t backend;
  if (backend_name == "cuda") backend = UR_BACKEND_CUDA;
  else if (backend_name == "level_zero") backend = UR_BACKEND_LEVEL_ZERO;
  else die(2, "--backend '" + backend_name + "' is not cuda or level_zero");

  auto* shared = static_cast<Shared*>(::mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  if (shared == MAP_FAILED) die(1, "mmap of the shared page failed");
  const pid_t child = ::fork();
  if (child < 0) die(1, "fork failed");
  if (child == 0) {
    Api api;
    load(api, loader);
    producer(api, backend, *shared);
    ::_exit(0);
  }
  auto stop = [&](int code, const std::string& why) {
    ::kill(child, SIGKILL);
    ::waitpid(child, nullptr, 0);
    if (!why.empty()) die(code, why);
  };
  for (int i = 0; i < 30000 && shared->state.load() == 0; ++i) {
    if (::waitpid(child, nullptr, WNOHANG) == child) die(77, "the producer ended before it exported (no device?)");
    ::usleep(1000);
  }
  if (shared->state.load() != 1) stop(1, shared->state.load() == 2 ? std::string("producer: ") + shared->error : "the producer did not export within 30 s");

  Api api;
  load(api, loader);
  Runtime rt = open_runtime(api, backend);
  ::signal(SIGALRM, on_alarm);
  const std::size_t size = shared->size;
  std::vector<unsigned char> real(shared->bytes, shared->bytes + size), forged = real;
  for (std::size_t k = kUmfHeader; k < size; ++k) forged[k] = static_cast<unsigned char>(~forged[k]);

  std::vector<Phase> phases;
  auto run = [&](const char* name, auto&& one) {
    g_phase = name;
    Phase p{name, {}, {}};
    const double end = now_us() + seconds * 1e6;
    while (now_us() < end) {
      ::alarm(5);
      const double t0 = now_us();
      const int r = one();
      p.us.push_back(now_us() - t0);
      ::alarm(0);
      ++p.results[r];
    }
    phases.push_back(std::move(p));
  };
  std::vector<unsigned char> buf(size);
  run("reject_size", [&] {
    std::memcpy(buf.data(), real.data(), size);
    void* ptr = nullptr;
    const ur_result_t r = api.urIPCOpenMemHandleExp(rt.context, rt.device, buf.data(), size - 1, &ptr);
    if (r == UR_RESULT_SUCCESS && ptr) api.urIPCCloseMemHandleExp(rt.context, ptr);
    return static_cast<int>(r);
  });
  run("reject_provider", [&] {
    std::memcpy(buf.data(), forged.data(), size);
    void* ptr = nullptr;
    const ur_result_t r = api.urIPCOpenMemHandleExp(rt.context, rt.device, buf.data(), size, &ptr);
    if (r == UR_RESULT_SUCCESS && ptr) api.urIPCCloseMemHandleExp(rt.context, ptr);
    return static_cast<int>(r);
  });
  run("open_close", [&] {
    std::memcpy(buf.data(), real.data(), size);
    void* ptr = nullptr;
    ur_result_t r = api.urIPCOpenMemHandleExp(rt.context, rt.device, buf.data(), size, &ptr);
    if (r == UR_RESULT_SUCCESS) r = api.urIPCCloseMemHandleExp(rt.context, ptr);
    return static_cast<int>(r);
  });
  stop(0, "");
  std::string out = "{\"backend\":\"" + backend_name + "\",\"handle_bytes\":" + std::to_string(size);
  for (const Phase& p : phases) out += "," + json(p);
  std::printf("%s}\n", out.c_str());
  return 0;
}
