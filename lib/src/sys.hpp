// Thin wrappers for the Linux calls the library makes, and the messages they produce.
#pragma once

#include <sys/types.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <variant>

#include "ipcref/errc.hpp"
#include "ipcref/unique_fd.hpp"

namespace ipcref::sys {

int pidfd_open(pid_t pid) noexcept;                 // -1 and errno on failure
int pidfd_getfd(int pidfd, int target_fd) noexcept;  // -1 and errno on failure
int pidfd_send_signal(int pidfd, int sig) noexcept;
int memfd_create(const char* name) noexcept;         // cloexec, sealing allowed
// Copies remote (address, length) ranges of process `pid`, in order, into `out`: the bytes
// read (less than asked when a range is not mapped), or -1 and errno. Needs ptrace access
// (PTRACE_MODE_ATTACH_REALCREDS), as pidfd_getfd does.
struct remote_range {
  std::uintptr_t address;
  std::size_t length;
};
long read_process(pid_t pid, std::span<const remote_range> ranges, std::span<std::byte> out) noexcept;

// Futex on a word of a MAP_SHARED page (no FUTEX_PRIVATE_FLAG: works across processes).
int futex_wake_all(std::uint32_t* word) noexcept;
// Waits while *word == expected, until the absolute CLOCK_MONOTONIC deadline (ns).
int futex_wait_until(std::uint32_t* word, std::uint32_t expected, std::uint64_t deadline_ns) noexcept;

std::uint64_t monotonic_ns() noexcept;
std::uint64_t random_u64();  // getrandom(2); never 0

std::size_t page_size() noexcept;
inline std::size_t round_up(std::size_t v, std::size_t to) noexcept { return (v + to - 1) / to * to; }

// "Operation not permitted (EPERM)"
std::string errno_text(int err);

[[noreturn]] void fail(errc code, const std::string& message);
[[noreturn]] inline void fail(const refusal& r) { fail(r.code, r.message); }

// A value, or the refusal that stands in its place: how the import path reports a handle it
// refuses without a throw (a fuzz worker's opens are mostly refused, and a throw cost more
// than the whole refusal). The public verbs throw it (sys::fail) at their boundary.
template <class T>
class or_refusal {
 public:
  or_refusal(T value) : v_(std::move(value)) {}
  or_refusal(refusal r) : v_(std::move(r)) {}
  explicit operator bool() const noexcept { return v_.index() == 0; }
  T& operator*() { return std::get<0>(v_); }
  T* operator->() { return &std::get<0>(v_); }
  refusal& error() { return std::get<1>(v_); }
  T take() {  // the value, or the refusal thrown
    if (!*this) fail(error());
    return std::move(std::get<0>(v_));
  }

 private:
  std::variant<T, refusal> v_;
};

// An owned mapping; munmap on destruction.
class mapping {
 public:
  mapping() = default;
  mapping(void* base, std::size_t length) noexcept : base_(base), length_(length) {}
  mapping(const mapping&) = delete;
  mapping& operator=(const mapping&) = delete;
  mapping(mapping&& o) noexcept { *this = std::move(o); }
  mapping& operator=(mapping&& o) noexcept;
  ~mapping() { reset(); }
  void* get() const noexcept { return base_; }
  std::size_t size() const noexcept { return length_; }
  void reset() noexcept;
  void* release() noexcept;

 private:
  void* base_ = nullptr;
  std::size_t length_ = 0;
};

}  // namespace ipcref::sys
