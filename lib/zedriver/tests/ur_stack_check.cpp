// Unified Runtime over libze_ipcheck, across two processes: what UR's Level Zero adapters need
// from the driver (lib/zedriver/README.md, "What it serves Unified Runtime").
//
//   ur_stack_check memory|physical|event
//
// A child process exports (USM device memory, physical memory created with ENABLE_IPC, or an
// IPC event), the parent imports it through UR and checks it: the bytes the exporter wrote
// are read back through a UR queue, or the event the exporter signals completes. The child
// exports so that the parent, its ancestor, may take its descriptors with pidfd_getfd under
// Yama ptrace_scope 1. UR_LOADER_USE_LEVEL_ZERO_V2 picks the adapter (0: v1, 1: v2).
// CTest runs it with the stack's libraries first on LD_LIBRARY_PATH and ZE_ENABLE_ALT_DRIVERS
// naming libze_ipcheck. Exit: 0 checked, 1 failed (the reason on stderr).
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "ur_api.h"

namespace {

struct Failure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

void check(ur_result_t r, const char* what) {
  if (r != UR_RESULT_SUCCESS) throw Failure(std::string(what) + " returned " + std::to_string(static_cast<int>(r)));
}

void require(bool ok, const std::string& what) {
  if (!ok) throw Failure(what);
}

// One message on the socket: a length and bytes.
void send_msg(int fd, const void* data, std::uint32_t n) {
  if (::write(fd, &n, sizeof n) != sizeof n || (n && ::write(fd, data, n) != static_cast<ssize_t>(n)))
    throw Failure("socket write failed");
}

std::vector<char> recv_msg(int fd) {
  std::uint32_t n = 0;
  if (::read(fd, &n, sizeof n) != sizeof n || n > 4096) throw Failure("socket read failed (peer gone?)");
  std::vector<char> v(n);
  for (std::uint32_t got = 0; got < n;) {
    const ssize_t k = ::read(fd, v.data() + got, n - got);
    if (k <= 0) throw Failure("socket read failed (peer gone?)");
    got += static_cast<std::uint32_t>(k);
  }
  return v;
}

struct Ur {
  ur_adapter_handle_t adapter = nullptr;
  ur_platform_handle_t platform = nullptr;
  ur_device_handle_t device = nullptr;
  ur_context_handle_t context = nullptr;
  ur_queue_handle_t queue = nullptr;

  Ur() {
    check(urLoaderInit(0, nullptr), "urLoaderInit");
    uint32_t n = 0;
    check(urAdapterGet(1, &adapter, &n), "urAdapterGet");
    require(n >= 1, "no UR adapter: is libur_adapter_level_zero on the library path?");
    check(urPlatformGet(adapter, 1, &platform, &n), "urPlatformGet");
    require(n >= 1, "the adapter has no platform: is ZE_ENABLE_ALT_DRIVERS naming libze_ipcheck?");
    check(urDeviceGet(platform, UR_DEVICE_TYPE_GPU, 1, &device, &n), "urDeviceGet");
    check(urContextCreate(1, &device, nullptr, &context), "urContextCreate");
    check(urQueueCreate(context, device, nullptr, &queue), "urQueueCreate");
  }
  ~Ur() {
    if (queue) urQueueRelease(queue);
    if (context) urContextRelease(context);
    urLoaderTearDown();
  }
  bool supports(ur_device_info_t what) {
    ur_bool_t v = false;
    return urDeviceGetInfo(device, what, sizeof v, &v, nullptr) == UR_RESULT_SUCCESS && v;
  }
  size_t granularity() {
    size_t g = 0;
    check(urVirtualMemGranularityGetInfo(context, device, 1, UR_VIRTUAL_MEM_GRANULARITY_INFO_MINIMUM, sizeof g, &g,
                                         nullptr),
          "urVirtualMemGranularityGetInfo");
    return g;
  }
};

constexpr std::uint32_t kPattern = 0x1f2e3d4c;
constexpr size_t kBytes = 4096;

void expect_pattern(Ur& ur, const void* p, size_t bytes) {
  std::vector<std::uint32_t> host(bytes / 4);
  check(urEnqueueUSMMemcpy(ur.queue, true, host.data(), p, bytes, 0, nullptr, nullptr), "urEnqueueUSMMemcpy");
  for (size_t i = 0; i < host.size(); ++i)
    require(host[i] == kPattern, "word " + std::to_string(i) + " reads " + std::to_string(host[i]) +
                                     ", not the exporter's " + std::to_string(kPattern));
}

// The exporter: makes the object, sends its handle, waits for the importer's word.
void exporter(const std::string& mode, int sock) {
  Ur ur;
  if (mode == "memory") {
    require(ur.supports(UR_DEVICE_INFO_IPC_MEMORY_SUPPORT_EXP), "UR_DEVICE_INFO_IPC_MEMORY_SUPPORT_EXP is false");
    void* p = nullptr;
    check(urUSMDeviceAlloc(ur.context, ur.device, nullptr, nullptr, kBytes, &p), "urUSMDeviceAlloc");
    check(urEnqueueUSMFill(ur.queue, p, sizeof kPattern, &kPattern, kBytes, 0, nullptr, nullptr), "urEnqueueUSMFill");
    check(urQueueFinish(ur.queue), "urQueueFinish");
    void* h = nullptr;
    size_t n = 0;
    check(urIPCGetMemHandleExp(ur.context, p, &h, &n), "urIPCGetMemHandleExp");
    send_msg(sock, h, static_cast<std::uint32_t>(n));
    recv_msg(sock);  // the importer is done
    check(urIPCPutMemHandleExp(ur.context, h), "urIPCPutMemHandleExp");
    check(urUSMFree(ur.context, p), "urUSMFree");
  } else if (mode == "physical") {
    require(ur.supports(UR_DEVICE_INFO_IPC_PHYSICAL_MEMORY_SUPPORT_EXP),
            "UR_DEVICE_INFO_IPC_PHYSICAL_MEMORY_SUPPORT_EXP is false");
    const size_t size = ur.granularity();
    ur_physical_mem_properties_t props{UR_STRUCTURE_TYPE_PHYSICAL_MEM_PROPERTIES, nullptr,
                                       UR_PHYSICAL_MEM_FLAG_ENABLE_IPC};
    ur_physical_mem_handle_t pm = nullptr;
    check(urPhysicalMemCreate(ur.context, ur.device, size, &props, &pm), "urPhysicalMemCreate(ENABLE_IPC)");
    void* va = nullptr;
    check(urVirtualMemReserve(ur.context, nullptr, size, &va), "urVirtualMemReserve");
    check(urVirtualMemMap(ur.context, va, size, pm, 0, UR_VIRTUAL_MEM_ACCESS_FLAG_READ_WRITE), "urVirtualMemMap");
    check(urEnqueueUSMFill(ur.queue, va, sizeof kPattern, &kPattern, size, 0, nullptr, nullptr), "urEnqueueUSMFill");
    check(urQueueFinish(ur.queue), "urQueueFinish");
    void* h = nullptr;
    size_t n = 0;
    check(urIPCGetPhysMemHandleExp(ur.context, pm, &h, &n), "urIPCGetPhysMemHandleExp");
    send_msg(sock, h, static_cast<std::uint32_t>(n));
    recv_msg(sock);
    check(urIPCPutPhysMemHandleExp(ur.context, h), "urIPCPutPhysMemHandleExp");
    check(urVirtualMemUnmap(ur.context, va, size), "urVirtualMemUnmap");
    check(urVirtualMemFree(ur.context, va, size), "urVirtualMemFree");
    check(urPhysicalMemRelease(pm), "urPhysicalMemRelease");
  } else {
    require(ur.supports(UR_DEVICE_INFO_IPC_EVENT_SUPPORT_EXP), "UR_DEVICE_INFO_IPC_EVENT_SUPPORT_EXP is false");
    ur_exp_event_desc_t desc{UR_STRUCTURE_TYPE_EXP_EVENT_DESC, nullptr, UR_EXP_EVENT_FLAG_IPC_EXP};
    ur_event_handle_t ev = nullptr;
    check(urEventCreateExp(ur.context, ur.device, &desc, &ev), "urEventCreateExp(IPC)");
    void* h = nullptr;
    size_t n = 0;
    check(urIPCGetEventHandleExp(ev, &h, &n), "urIPCGetEventHandleExp");
    send_msg(sock, h, static_cast<std::uint32_t>(n));
    recv_msg(sock);  // opened
    check(urEnqueueEventsWaitWithBarrierExt(ur.queue, nullptr, 0, nullptr, &ev), "urEnqueueEventsWaitWithBarrierExt");
    check(urQueueFinish(ur.queue), "urQueueFinish");
    send_msg(sock, "s", 1);
    recv_msg(sock);  // done
    check(urIPCPutEventHandleExp(ur.context, h), "urIPCPutEventHandleExp");
    check(urEventRelease(ev), "urEventRelease");
  }
}

void importer(const std::string& mode, int sock) {
  Ur ur;
  std::vector<char> h = recv_msg(sock);
  if (mode == "memory") {
    void* p = nullptr;
    check(urIPCOpenMemHandleExp(ur.context, ur.device, h.data(), h.size(), &p), "urIPCOpenMemHandleExp");
    expect_pattern(ur, p, kBytes);
    check(urIPCCloseMemHandleExp(ur.context, p), "urIPCCloseMemHandleExp");
  } else if (mode == "physical") {
    ur_physical_mem_handle_t pm = nullptr;
    check(urIPCOpenPhysMemHandleExp(ur.context, ur.device, h.data(), h.size(), &pm), "urIPCOpenPhysMemHandleExp");
    const size_t size = ur.granularity();
    void* va = nullptr;
    check(urVirtualMemReserve(ur.context, nullptr, size, &va), "urVirtualMemReserve");
    check(urVirtualMemMap(ur.context, va, size, pm, 0, UR_VIRTUAL_MEM_ACCESS_FLAG_READ_WRITE), "urVirtualMemMap");
    expect_pattern(ur, va, size);
    check(urVirtualMemUnmap(ur.context, va, size), "urVirtualMemUnmap");
    check(urVirtualMemFree(ur.context, va, size), "urVirtualMemFree");
    check(urIPCClosePhysMemHandleExp(ur.context, pm), "urIPCClosePhysMemHandleExp");
  } else {
    ur_event_handle_t ev = nullptr;
    check(urIPCOpenEventHandleExp(ur.context, h.data(), h.size(), &ev), "urIPCOpenEventHandleExp");
    send_msg(sock, "o", 1);
    recv_msg(sock);  // the exporter signaled it
    check(urEventWait(1, &ev), "urEventWait on the opened event");
    ur_event_status_t st{};
    check(urEventGetInfo(ev, UR_EVENT_INFO_COMMAND_EXECUTION_STATUS, sizeof st, &st, nullptr), "urEventGetInfo");
    require(st == UR_EVENT_STATUS_COMPLETE, "the opened event is not complete after the exporter's signal");
    check(urEventRelease(ev), "urEventRelease");
  }
  send_msg(sock, "d", 1);
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc == 2 ? argv[1] : "";
  if (mode != "memory" && mode != "physical" && mode != "event") {
    std::fprintf(stderr, "usage: %s memory|physical|event\n", argv[0]);
    return 2;
  }
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) return 1;
  const pid_t child = ::fork();
  if (child < 0) return 1;
  if (child == 0) {
    ::close(sv[0]);
    try {
      exporter(mode, sv[1]);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "exporter (%s): %s\n", mode.c_str(), e.what());
      ::_exit(1);
    }
    ::_exit(0);
  }
  ::close(sv[1]);
  int rc = 0;
  try {
    importer(mode, sv[0]);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "importer (%s): %s\n", mode.c_str(), e.what());
    rc = 1;
  }
  ::close(sv[0]);  // an exporter still waiting reads end of file and fails
  int status = 0;
  ::waitpid(child, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::fprintf(stderr, "the exporter failed (status 0x%x)\n", status);
    rc = 1;
  }
  if (rc == 0) std::printf("ur %s IPC across two processes: checked\n", mode.c_str());
  return rc;
}
