// ref's floor: the syscalls that any implementation of pidfd-based memory IPC must make,
// made directly. What is in it, and why:
//   open + close: pidfd_open(exporter), pidfd_getfd(pidfd, fd), close(pidfd), mmap,
//     close(fd) ... munmap. pidfd_open and its close belong in the floor: rb.close.no_leak
//     forbids a descriptor left behind once every mapping is closed, so an implementation
//     cannot keep a pidfd per exporter across an open + close cycle.
//   open + close, proven: the same plus the one system call an open that honours
//     revocation cannot do without: a process_vm_readv of memory only the exporter writes
//     (rb.put.revokes, rb.revoke.tamper): two ranges on two pages, as ipcref reads an
//     export's slot and its object's witness. Not a floor of a verb (the goals stay against
//     the bare floor): its ratio to the bare floor is the least that revocation costs any
//     implementation, and ref's open + close against it is ipcref's own cost.
//   The payload starts at offset 0 of the object: the data object holds only its bytes.
//   get: getrandom (a fresh export token; rb.put.revokes needs one per export).
//   physical open + map: pidfd_open, pidfd_getfd, close(pidfd), mmap PROT_NONE (reserve),
//     mmap MAP_FIXED of the object (map), mmap MAP_FIXED PROT_NONE (unmap, keeping the
//     reservation), munmap (free), close(fd).
//   first touch: one read per page of a fresh mapping.
#include <elf.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "floor.hpp"
#include "ipcref/record.hpp"

namespace ipcheck::bench {
namespace {

std::size_t page() {
  static const std::size_t p = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  return p;
}

[[noreturn]] void fail(const std::string& what) {
  throw FloorError("ref floor: " + what + ": " + std::strerror(errno));
}

class RefFloor final : public Floor {
 public:
  std::map<std::string, std::string> describe() const override {
    return {{"mem_get", "getrandom(8 bytes)"},
            {"mem_open", "pidfd_open + pidfd_getfd + close(pidfd) + mmap + close(fd)"},
            {"mem_open_repeat", "pidfd_open + pidfd_getfd + close(pidfd) + mmap + close(fd) while a mapping of the "
                                "same export is held (munmap untimed)"},
            {"mem_close", "munmap"},
            {"mem_open_close", "pidfd_open + pidfd_getfd + close(pidfd) + mmap + close(fd) + munmap"},
            {"mem_open_close_proven",
             "pidfd_open + pidfd_getfd + close(pidfd) + process_vm_readv(two ranges, two pages) + mmap + close(fd) "
             "+ munmap"},
            {"mem_first_touch", "one read per page of a mapping made with mmap"},
            {"phys_open_map",
             "pidfd_open + pidfd_getfd + close(pidfd) + mmap(PROT_NONE) + mmap(MAP_FIXED, the object) + "
             "mmap(MAP_FIXED, PROT_NONE) + munmap + close(fd)"}};
  }

  void get(DevPtr, std::size_t) override {
    std::uint64_t token = 0;
    if (::getrandom(&token, sizeof token, 0) != sizeof token) fail("getrandom");
  }

  std::uint64_t open(const ExportMsg& e) override {
    const ipcref::record::fields rec = ipcref::record::decode(e.bytes);
    const int fd = take(e, rec);
    void* p = ::mmap(nullptr, e.size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, static_cast<off_t>(rec.offset));
    ::close(fd);
    if (p == MAP_FAILED) fail("mmap");
    return reinterpret_cast<std::uint64_t>(p);
  }

  void close(std::uint64_t mapped, const ExportMsg& e) override {
    if (::munmap(reinterpret_cast<void*>(mapped), e.size) != 0) fail("munmap");
  }

  bool has_proven_open() const override { return true; }

  std::uint64_t open_proven(const ExportMsg& e) override {
    const ipcref::record::fields rec = ipcref::record::decode(e.bytes);
    const int fd = take(e, rec);
    // 32 bytes (a slot) and 8 (a witness) on two pages of the exporter, as ipcref reads them.
    const auto [page1, page2] = readable_addresses(static_cast<pid_t>(rec.pid));
    unsigned char got[40];
    iovec local{got, sizeof got};
    iovec remote[2] = {{reinterpret_cast<void*>(page1), 32}, {reinterpret_cast<void*>(page2), 8}};
    if (::process_vm_readv(static_cast<pid_t>(rec.pid), &local, 1, remote, 2, 0) != static_cast<ssize_t>(sizeof got))
      fail("process_vm_readv(pid " + std::to_string(rec.pid) + ")");
    void* p = ::mmap(nullptr, e.size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, static_cast<off_t>(rec.offset));
    ::close(fd);
    if (p == MAP_FAILED) fail("mmap");
    return reinterpret_cast<std::uint64_t>(p);
  }

  void touch(std::uint64_t mapped, std::size_t bytes) override { read_pages(mapped, bytes); }

  Outcome adapter_touch(Adapter&, DevPtr mapped, std::size_t bytes) override {
    read_pages(mapped, bytes);  // ref's memory is host memory: the CPU touches it
    return Outcome::success();
  }

  void phys_open_map(const ExportMsg& e) override {
    const ipcref::record::fields rec = ipcref::record::decode(e.bytes);
    const int fd = take(e, rec);
    void* range = ::mmap(nullptr, e.size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (range == MAP_FAILED) fail("mmap(reserve)");
    if (::mmap(range, e.size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0) ==
        MAP_FAILED)
      fail("mmap(map)");
    if (::mmap(range, e.size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0) == MAP_FAILED)
      fail("mmap(unmap)");
    ::munmap(range, e.size);
    ::close(fd);
  }

 private:
  // The exporter's descriptor: pidfd_getfd, or a dup of the one that came by SCM_RIGHTS.
  static int take(const ExportMsg& e, const ipcref::record::fields& rec) {
    if (e.fd) {
      const int fd = ::fcntl(e.fd.get(), F_DUPFD_CLOEXEC, 0);
      if (fd < 0) fail("fcntl(F_DUPFD_CLOEXEC)");
      return fd;
    }
    const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, rec.pid, 0));
    if (pidfd < 0) fail("pidfd_open(" + std::to_string(rec.pid) + ")");
    const int fd = static_cast<int>(::syscall(SYS_pidfd_getfd, pidfd, rec.fd, 0));
    const int err = errno;
    ::close(pidfd);
    errno = err;
    if (fd < 0) fail("pidfd_getfd(pid " + std::to_string(rec.pid) + ", fd " + std::to_string(rec.fd) + ")");
    return fd;
  }

  // Two addresses on two pages the exporter always has mapped: its AT_RANDOM bytes (on its
  // stack) and its program headers (AT_PHDR, in its executable), found once per exporter
  // in /proc/<pid>/auxv: where the proven floor reads 32 and 8 bytes.
  static std::pair<std::uintptr_t, std::uintptr_t> readable_addresses(pid_t pid) {
    static pid_t cached_pid = 0;
    static std::pair<std::uintptr_t, std::uintptr_t> cached;
    if (pid == cached_pid) return cached;
    const int fd = ::open(("/proc/" + std::to_string(pid) + "/auxv").c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) fail("open(/proc/" + std::to_string(pid) + "/auxv)");
    std::uint64_t entry[2];
    std::uintptr_t random = 0, phdr = 0;
    while (::read(fd, entry, sizeof entry) == static_cast<ssize_t>(sizeof entry) && entry[0] != AT_NULL) {
      if (entry[0] == AT_RANDOM) random = static_cast<std::uintptr_t>(entry[1]);
      if (entry[0] == AT_PHDR) phdr = static_cast<std::uintptr_t>(entry[1]);
    }
    ::close(fd);
    if (!random || !phdr) fail("no AT_RANDOM or AT_PHDR in the auxv of pid " + std::to_string(pid));
    cached_pid = pid;
    cached = {random, phdr};
    return cached;
  }

  static void read_pages(std::uint64_t mapped, std::size_t bytes) {
    const volatile unsigned char* p = reinterpret_cast<const volatile unsigned char*>(mapped);
    unsigned sum = 0;
    for (std::size_t at = 0; at < bytes; at += page()) sum += p[at];
    sink_ = sink_ + sum;
  }

  static inline volatile unsigned sink_ = 0;
};

}  // namespace

std::unique_ptr<Floor> make_ref_floor() { return std::make_unique<RefFloor>(); }

std::unique_ptr<Floor> make_floor(const std::string& adapter, const std::map<std::string, std::string>& adapter_options,
                                  std::string& why) {
  if (adapter == "ref") return make_ref_floor();
  if (adapter == "cuda") {
    auto lib = adapter_options.find("library");
    return make_cuda_floor(lib == adapter_options.end() ? "" : lib->second, why);
  }
  why = "no floor is defined for adapter '" + adapter + "' (bench/ipc has floors for ref and cuda)";
  return nullptr;
}

}  // namespace ipcheck::bench
