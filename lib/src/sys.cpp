#include "sys.hpp"

#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <climits>
#include <cstring>
#include <utility>

namespace ipcref::sys {

int pidfd_open(pid_t pid) noexcept { return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)); }

int pidfd_getfd(int pidfd, int target_fd) noexcept {
  return static_cast<int>(::syscall(SYS_pidfd_getfd, pidfd, target_fd, 0));
}

int pidfd_send_signal(int pidfd, int sig) noexcept {
  return static_cast<int>(::syscall(SYS_pidfd_send_signal, pidfd, sig, nullptr, 0));
}

int memfd_create(const char* name) noexcept {
  return ::memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
}

long read_process(pid_t pid, std::span<const remote_range> ranges, std::span<std::byte> out) noexcept {
  constexpr std::size_t kMaxRanges = 4;
  if (ranges.size() > kMaxRanges) {
    errno = EINVAL;
    return -1;
  }
  iovec remote[kMaxRanges];
  std::size_t total = 0;
  for (std::size_t i = 0; i < ranges.size(); ++i) {
    remote[i] = {reinterpret_cast<void*>(ranges[i].address), ranges[i].length};
    total += ranges[i].length;
  }
  if (total > out.size()) {
    errno = EINVAL;
    return -1;
  }
  iovec local{out.data(), total};
  return static_cast<long>(::syscall(SYS_process_vm_readv, pid, &local, 1ul, remote, ranges.size(), 0ul));
}

int futex_wake_all(std::uint32_t* word) noexcept {
  return static_cast<int>(::syscall(SYS_futex, word, FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0));
}

int futex_wait_until(std::uint32_t* word, std::uint32_t expected, std::uint64_t deadline_ns) noexcept {
  timespec ts{};
  ts.tv_sec = static_cast<time_t>(deadline_ns / 1000000000ull);
  ts.tv_nsec = static_cast<long>(deadline_ns % 1000000000ull);
  // FUTEX_WAIT_BITSET takes an absolute CLOCK_MONOTONIC deadline, so retries never stretch it.
  return static_cast<int>(::syscall(SYS_futex, word, FUTEX_WAIT_BITSET, expected, &ts, nullptr,
                                    FUTEX_BITSET_MATCH_ANY));
}

std::uint64_t monotonic_ns() noexcept {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<std::uint64_t>(ts.tv_nsec);
}

std::uint64_t random_u64() {
  for (;;) {
    std::uint64_t v = 0;
    ssize_t n = ::getrandom(&v, sizeof v, 0);
    if (n == static_cast<ssize_t>(sizeof v)) {
      if (v != 0) return v;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    fail(errc::exhausted, "getrandom failed: " + errno_text(errno));
  }
}

std::size_t page_size() noexcept {
  static const std::size_t size = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  return size;
}

std::string errno_text(int err) {
  const char* name = ::strerrorname_np(err);
  return std::string(::strerrordesc_np(err) ? ::strerrordesc_np(err) : "unknown error") + " (" +
         (name ? name : std::to_string(err)) + ")";
}

void fail(errc code, const std::string& message) { throw exception(code, message); }

mapping& mapping::operator=(mapping&& o) noexcept {
  if (this != &o) {
    reset();
    base_ = std::exchange(o.base_, nullptr);
    length_ = std::exchange(o.length_, 0);
  }
  return *this;
}

void mapping::reset() noexcept {
  if (base_) ::munmap(base_, length_);
  base_ = nullptr;
  length_ = 0;
}

void* mapping::release() noexcept {
  length_ = 0;
  return std::exchange(base_, nullptr);
}

}  // namespace ipcref::sys
