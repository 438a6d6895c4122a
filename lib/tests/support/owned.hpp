// RAII owners for what ipcref hands out (allocations, opened mappings, physical objects,
// events, reservations), so a failing test never leaks into the next one's audit.
#pragma once

#include <cstddef>
#include <optional>
#include <utility>

#include "ipcref/ipcref.hpp"

namespace ipcref_test {

template <class T, class Drop>
class owned {
 public:
  owned() = default;
  owned(T value, ipcref::context ctx) : value_(value), ctx_(std::move(ctx)) {}
  owned(const owned&) = delete;
  owned& operator=(const owned&) = delete;
  owned(owned&& o) noexcept : value_(std::exchange(o.value_, T{})), ctx_(std::move(o.ctx_)) {}
  owned& operator=(owned&& o) noexcept {
    if (this != &o) {
      drop_quietly();
      value_ = std::exchange(o.value_, T{});
      ctx_ = std::move(o.ctx_);
    }
    return *this;
  }
  ~owned() { drop_quietly(); }

  T get() const noexcept { return value_; }
  template <class U>
  U* as() const noexcept {
    return static_cast<U*>(static_cast<void*>(value_));
  }
  explicit operator bool() const noexcept { return value_ != T{}; }
  // Gives up ownership: the caller (or the test's explicit check) drops it.
  T release() noexcept { return std::exchange(value_, T{}); }
  // Drops it now; ipcref errors propagate to the test.
  void reset() {
    if (value_ != T{}) Drop{}(std::exchange(value_, T{}), *ctx_);
  }

 private:
  void drop_quietly() noexcept {
    try {
      reset();
    } catch (...) {
      // A test that cares about the drop's outcome calls reset() itself.
    }
  }
  T value_{};
  std::optional<ipcref::context> ctx_;
};

struct free_usm {
  void operator()(void* p, const ipcref::context& ctx) const { ipcref::free(p, ctx); }
};
struct close_memory {
  void operator()(void* p, const ipcref::context& ctx) const { ipcref::ipc::memory::close(p, ctx); }
};
struct release_physical {
  void operator()(ipcref::physical_mem pm, const ipcref::context&) const { ipcref::physical_release(pm); }
};
struct release_event {
  void operator()(ipcref::event e, const ipcref::context&) const { ipcref::event_release(e); }
};

using usm_ptr = owned<void*, free_usm>;             // from malloc_device/shared/host
using opened_ptr = owned<void*, close_memory>;      // from ipc::memory::open
using physical_ref = owned<ipcref::physical_mem, release_physical>;
using event_ref = owned<ipcref::event, release_event>;

// A virtual range, with at most one mapping at its start that is unmapped first.
class reserved_range {
 public:
  reserved_range(const ipcref::context& ctx, std::size_t bytes)
      : ctx_(ctx), bytes_(bytes), ptr_(ipcref::virtual_reserve(ctx, bytes)) {}
  reserved_range(const reserved_range&) = delete;
  reserved_range& operator=(const reserved_range&) = delete;
  ~reserved_range() {
    try {
      if (mapped_) ipcref::virtual_unmap(ctx_, ptr_, mapped_);
    } catch (...) {
    }
    try {
      ipcref::virtual_free(ctx_, ptr_, bytes_);
    } catch (...) {
    }
  }
  void* get() const noexcept { return ptr_; }
  template <class U>
  U* as() const noexcept {
    return static_cast<U*>(ptr_);
  }
  std::size_t size() const noexcept { return bytes_; }
  void map(ipcref::physical_mem pm, std::size_t bytes, ipcref::access acc = ipcref::access::read_write) {
    ipcref::virtual_map(ctx_, ptr_, bytes, pm, 0, acc);
    mapped_ = bytes;
  }
  void unmap() {
    ipcref::virtual_unmap(ctx_, ptr_, mapped_);
    mapped_ = 0;
  }

 private:
  ipcref::context ctx_;
  std::size_t bytes_;
  void* ptr_;
  std::size_t mapped_ = 0;
};

}  // namespace ipcref_test
