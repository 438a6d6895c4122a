// ipcref_peer: the other process of the cross-process tests. It serves requests (see
// support/channel.hpp) on the channel descriptor named by argv[1] until the channel ends,
// and replies to each with the outcome of the ipcref call it made.
//
//   ipcref_peer <channel fd> <parent pid>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>

#include "ipcref/ipcref.hpp"
#include "support/audit.hpp"
#include "support/channel.hpp"
#include "support/pattern.hpp"

namespace {

using namespace ipcref;
using ipcref_test::message;
using ipcref_test::op;

template <class T>
T* ptr_of(std::uint64_t v) {
  return reinterpret_cast<T*>(static_cast<std::uintptr_t>(v));
}
std::uint64_t value_of(const void* p) { return reinterpret_cast<std::uintptr_t>(p); }

class server {
 public:
  explicit server(int sock) : sock_(sock) {}

  // Serves until the channel ends; the exit status of the process.
  int run() {
    for (;;) {
      std::optional<ipcref_test::received> r = ipcref_test::receive_message(sock_, std::chrono::hours(24));
      if (!r) return 0;
      message reply;
      reply.verb = r->msg.verb;
      int attach = -1;
      try {
        attach = serve(r->msg, r->fd.get(), reply);
      } catch (const ipcref::exception& e) {
        reply.status = static_cast<std::int32_t>(e.code_value());
        reply.set_text(e.what());
      } catch (const std::exception& e) {
        reply.status = ipcref_test::status_other_exception;
        reply.set_text(e.what());
      }
      ipcref_test::send_message(sock_, reply, reply.status == 0 ? attach : -1);
      if (after_reply_) {
        auto action = std::move(after_reply_);
        after_reply_ = nullptr;
        action();
      }
      if (exit_status_ >= 0) return exit_status_;
    }
  }

 private:
  handle& stored(std::uint64_t id) {
    auto it = handles_.find(id);
    if (it == handles_.end()) throw std::runtime_error("peer: no handle " + std::to_string(id));
    return it->second;
  }
  // Keeps a handle for a later put; returns the descriptor to attach when asked to.
  int keep(const handle& h, message& reply, bool attach) {
    reply.a = ++last_id_;
    reply.set_payload(h.data());
    handles_[reply.a] = h;
    return attach ? h.descriptor() : -1;
  }

  // Carries out one request; the descriptor to send with the reply, or -1.
  int serve(const message& m, int fd, message& reply) {
    open_options opts;
    opts.descriptor = fd;
    opts.control_descriptor = control_.get();
    switch (m.verb) {
      case op::hello:
        reply.a = static_cast<std::uint64_t>(::getpid());
        return -1;
      case op::platform: platform(reply); return -1;
      case op::alloc: alloc(m, reply); return -1;
      case op::free: ipcref::free(ptr_of<void>(m.a), ctx()); return -1;
      case op::fill: ipcref_test::fill_pattern(ptr_of<void>(m.a), m.b, m.c); return -1;
      case op::verify: {
        const std::size_t at = ipcref_test::find_mismatch(ptr_of<void>(m.a), m.b, m.c);
        reply.a = at == SIZE_MAX ? UINT64_MAX : at;
        return -1;
      }
      case op::mem_get: return keep(ipc::memory::get(ptr_of<void>(m.a), ctx()), reply, m.b != 0);
      case op::mem_put: ipc::memory::put(stored(m.a), ctx()); return -1;
      case op::mem_open: reply.a = value_of(ipc::memory::open(m.bytes(), ctx(), dev(), opts)); return -1;
      case op::mem_close: ipc::memory::close(ptr_of<void>(m.a), ctx()); return -1;
      case op::phys_create: reply.a = value_of(physical_create(ctx(), dev(), m.a, m.b != 0)); return -1;
      case op::phys_get: return keep(ipc::physical_memory::get(ptr_of<physical_mem_object>(m.a), ctx()), reply, m.b != 0);
      case op::phys_put: ipc::physical_memory::put(stored(m.a), ctx()); return -1;
      case op::phys_open: phys_open(m, opts, reply); return -1;
      case op::phys_map: phys_map(m, reply); return -1;
      case op::phys_unmap:
        virtual_unmap(ctx(), ptr_of<void>(m.a), m.b);
        virtual_free(ctx(), ptr_of<void>(m.a), m.b);
        return -1;
      case op::phys_release: phys_release(m); return -1;
      case op::event_create: reply.a = value_of(event_create(ctx(), dev(), {m.a != 0, false})); return -1;
      case op::event_get: return keep(ipc::event::get(ptr_of<event_object>(m.a), ctx()), reply, m.b != 0);
      case op::event_put: ipc::event::put(stored(m.a), ctx()); return -1;
      case op::event_open: reply.a = value_of(ipc::event::open(m.bytes(), ctx(), dev(), opts)); return -1;
      case op::event_signal: signal_event(m); return -1;
      case op::event_wait: wait_event(m, reply); return -1;
      case op::event_query: reply.a = event_query(ptr_of<event_object>(m.a)); return -1;
      case op::event_reset: event_reset(ptr_of<event_object>(m.a)); return -1;
      case op::event_release: event_release(ptr_of<event_object>(m.a)); return -1;
      case op::counts: counts(reply); return -1;
      case op::exit: exit_status_ = static_cast<int>(m.a); return -1;
      case op::control_get: return stored(m.a).control_descriptor();
      case op::set_control:
        control_.reset(fd >= 0 ? ::fcntl(fd, F_DUPFD_CLOEXEC, 0) : -1);
        return -1;
      case op::probe_control: probe_control(reply); return -1;
    }
    reply.status = ipcref_test::status_bad_request;
    reply.set_text("peer: unknown request " + std::to_string(static_cast<unsigned>(m.verb)));
    return -1;
  }

  // op::platform: the platform as describe_platform sees it, asked twice: a configuration
  // error must reach every caller, not only the first.
  void platform(message& reply) {
    std::string first, second;
    for (std::string* out : {&first, &second}) {
      try {
        *out = describe_platform();
      } catch (const ipcref::exception& e) {
        *out = std::string("error ") + errc_name(e.code_value()) + ": " + e.what();
      }
    }
    if (first != second) throw std::runtime_error("platform answered differently: " + first + " / " + second);
    if (first.rfind("error ", 0) == 0) {
      reply.status = static_cast<std::int32_t>(errc::invalid);
      reply.set_text(first.substr(first.find(": ") + 2));
      return;
    }
    reply.set_text(first);
  }

  // op::alloc: b bytes of usm kind a (0 host, 1 device, else shared), filled with pattern c.
  void alloc(const message& m, message& reply) {
    void* p = nullptr;
    if (m.a == 0) p = malloc_host(m.b, ctx());
    else if (m.a == 1) p = malloc_device(m.b, dev(), ctx());
    else p = malloc_shared(m.b, dev(), ctx());
    ipcref_test::fill_pattern(p, m.b, m.c);
    reply.a = value_of(p);
  }

  // op::phys_open: the opened object, its size, whether it is IPC-enabled, its reference count.
  void phys_open(const message& m, const open_options& opts, message& reply) {
    physical_mem pm = ipc::physical_memory::open(m.bytes(), ctx(), dev(), opts);
    reply.a = value_of(pm);
    reply.b = physical_size(pm);
    reply.c = physical_ipc_enabled(pm);
    reply.d = physical_reference_count(pm);
  }

  // op::phys_map: b bytes of physical object a mapped read-write into a range reserved for
  // them (freed again when the map fails).
  void phys_map(const message& m, message& reply) {
    void* p = virtual_reserve(ctx(), m.b);
    try {
      virtual_map(ctx(), p, m.b, ptr_of<physical_mem_object>(m.a), 0, access::read_write);
    } catch (...) {
      virtual_free(ctx(), p, m.b);
      throw;
    }
    reply.a = value_of(p);
  }

  // op::phys_release: opened objects are closed, created ones released: the verbs a real
  // program would use.
  void phys_release(const message& m) {
    physical_mem pm = ptr_of<physical_mem_object>(m.a);
    try {
      ipc::physical_memory::close(pm, ctx());
    } catch (const ipcref::exception&) {
      physical_release(pm);
    }
  }

  // op::event_signal: now (b = 0), or b milliseconds after the reply.
  void signal_event(const message& m) {
    event e = ptr_of<event_object>(m.a);
    if (m.b == 0) {
      event_signal(e);
    } else {
      const auto delay = std::chrono::milliseconds(m.b);
      after_reply_ = [e, delay] {
        std::this_thread::sleep_for(delay);
        event_signal(e);
      };
    }
  }

  // op::event_wait: whether event a is signaled within b milliseconds (1 when it is), and
  // how long the wait took, in nanoseconds.
  void wait_event(const message& m, message& reply) {
    const auto start = std::chrono::steady_clock::now();
    reply.a = event_wait(ptr_of<event_object>(m.a), std::chrono::milliseconds(m.b));
    reply.b = static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count());
  }

  // op::counts: this process's descriptors and mappings, ipcref's open mappings and live exports.
  static void counts(message& reply) {
    const ipcref_test::process_audit audit = ipcref_test::audit_self();
    const resource_counts rc = get_resource_counts();
    reply.a = audit.descriptors;
    reply.b = audit.mappings;
    reply.c = rc.open_mappings;
    reply.d = rc.live_exports;
  }

  static std::string describe_platform() {
    std::string out = device_config_source() + "|";
    for (const device& d : get_devices()) {
      out += d.name() + ":";
      const char* sep = "";
      for (aspect a : {aspect::ipc_memory, aspect::ipc_physical_memory, aspect::ipc_event})
        if (d.has(a)) {
          out += sep;
          out += aspect_name(a);
          sep = ",";
        }
      out += ";";
    }
    return out;
  }

  // Every way of writing the held control descriptor (SECURITY.md): a bit per way that worked.
  void probe_control(message& reply) const {
    if (!control_) throw std::runtime_error("peer: no control descriptor held (op::set_control)");
    const int fd = control_.get();
    const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    std::uint64_t worked = 0, bit = 1;
    auto attempt = [&](bool ok) {
      if (ok) worked |= bit;
      reply.b |= bit;
      bit <<= 1;
    };
    char byte = 1;
    attempt(::pwrite(fd, &byte, 1, 64) == 1);
    void* w = ::mmap(nullptr, page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    attempt(w != MAP_FAILED);
    if (w != MAP_FAILED) ::munmap(w, page);
    void* r = ::mmap(nullptr, page, PROT_READ, MAP_SHARED, fd, 0);
    attempt(r != MAP_FAILED && ::mprotect(r, page, PROT_READ | PROT_WRITE) == 0);
    if (r != MAP_FAILED) ::munmap(r, page);
    attempt(::ftruncate(fd, 0) == 0);
    attempt(::fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, static_cast<off_t>(page)) == 0);
    attempt(::fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE) == 0);
    const std::string path = "/proc/self/fd/" + std::to_string(fd);
    const int again = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
    attempt(again >= 0 && ::pwrite(again, &byte, 1, 64) == 1);
    if (again >= 0) ::close(again);
    reply.a = worked;
  }

  // Made on first use: the platform tests start peers whose configuration fails.
  const context& ctx() {
    if (!ctx_) ctx_.emplace();
    return *ctx_;
  }
  device dev() { return ctx().devices().front(); }

  int sock_;
  std::optional<context> ctx_;
  std::map<std::uint64_t, handle> handles_;
  unique_fd control_;  // passed as open_options::control_descriptor (op::set_control)
  std::uint64_t last_id_ = 0;
  std::function<void()> after_reply_;
  int exit_status_ = -1;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: ipcref_peer <channel fd> <parent pid>\n");
    return 2;
  }
  const int sock = std::atoi(argv[1]);
  const pid_t parent = static_cast<pid_t>(std::atol(argv[2]));
  // Never outlive the test: die with it, and check it did not die before this was set.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) return 3;
  try {
    return server(sock).run();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ipcref_peer: %s\n", e.what());
    return 1;
  }
}
