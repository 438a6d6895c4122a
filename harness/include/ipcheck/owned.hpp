// RAII owners of adapter objects, so a role body that ends early (a failed requirement,
// a skip) leaves nothing behind to be mistaken for a leak of the runtime under test.
#pragma once

#include <cstdint>
#include <utility>

#include "ipcheck/adapter.hpp"

namespace ipcheck {

class Owned {
 public:
  using Drop = Outcome (*)(Adapter&, std::uint64_t value, std::size_t extra);

  Owned() = default;
  Owned(Adapter& a, std::uint64_t value, Drop drop, std::size_t extra = 0)
      : adapter_(&a), value_(value), extra_(extra), drop_(drop) {}
  Owned(const Owned&) = delete;
  Owned& operator=(const Owned&) = delete;
  Owned(Owned&& o) noexcept { *this = std::move(o); }
  Owned& operator=(Owned&& o) noexcept {
    if (this != &o) {
      reset();
      adapter_ = std::exchange(o.adapter_, nullptr);
      value_ = std::exchange(o.value_, 0);
      extra_ = o.extra_;
      drop_ = std::exchange(o.drop_, nullptr);
    }
    return *this;
  }
  ~Owned() { reset(); }

  std::uint64_t get() const noexcept { return value_; }
  explicit operator bool() const noexcept { return drop_ != nullptr; }
  // Drops the object now and returns what the adapter said.
  Outcome reset() {
    if (!drop_) return Outcome::success();
    Outcome o = drop_(*adapter_, value_, extra_);
    drop_ = nullptr;
    return o;
  }
  // Stops owning (the caller dropped it another way).
  std::uint64_t release() noexcept {
    drop_ = nullptr;
    return value_;
  }

  static Owned allocation(Adapter& a, DevPtr p) {
    return {a, p, [](Adapter& x, std::uint64_t v, std::size_t) { return x.free(v); }};
  }
  static Owned mapping(Adapter& a, DevPtr p) {
    return {a, p, [](Adapter& x, std::uint64_t v, std::size_t) { return x.mem_close(v); }};
  }
  static Owned mem_export(Adapter& a, ObjectId id) {
    return {a, id, [](Adapter& x, std::uint64_t v, std::size_t) { return x.mem_put(v); }};
  }
  static Owned physical(Adapter& a, ObjectId id) {
    return {a, id, [](Adapter& x, std::uint64_t v, std::size_t) { return x.phys_release(v); }};
  }
  static Owned opened_physical(Adapter& a, ObjectId id) {
    return {a, id, [](Adapter& x, std::uint64_t v, std::size_t) { return x.phys_close(v); }};
  }
  static Owned phys_export(Adapter& a, ObjectId id) {
    return {a, id, [](Adapter& x, std::uint64_t v, std::size_t) { return x.phys_put(v); }};
  }
  static Owned event(Adapter& a, ObjectId id) {
    return {a, id, [](Adapter& x, std::uint64_t v, std::size_t) { return x.event_release(v); }};
  }
  static Owned event_export(Adapter& a, ObjectId id) {
    return {a, id, [](Adapter& x, std::uint64_t v, std::size_t) { return x.event_put(v); }};
  }
  static Owned reservation(Adapter& a, DevPtr p, std::size_t bytes) {
    return {a, p, [](Adapter& x, std::uint64_t v, std::size_t n) { return x.vm_free(v, n); }, bytes};
  }
  static Owned vm_mapping(Adapter& a, DevPtr p, std::size_t bytes) {
    return {a, p, [](Adapter& x, std::uint64_t v, std::size_t n) { return x.vm_unmap(v, n); }, bytes};
  }

 private:
  Adapter* adapter_ = nullptr;
  std::uint64_t value_ = 0;
  std::size_t extra_ = 0;
  Drop drop_ = nullptr;
};

}  // namespace ipcheck
