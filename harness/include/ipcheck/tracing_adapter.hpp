// Wraps the adapter a role uses: counts every verb call, and marks the verb about to run
// in `ipcheck_verb_mark` so that an outside observer (the BPF audit) can attribute each
// descriptor and mapping to the verb that made it.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "ipcheck/adapter.hpp"

extern "C" {
// Read by the OS audit from outside the process; `seq` is odd while a verb runs. The layout
// is shared with harness/trace/ipcaudit.h (struct ipcaudit_mark): append, never reorder.
struct ipcheck_verb_mark_t {
  volatile unsigned long long seq;
  volatile unsigned long long verb_id;
  char verb[32];
  volatile unsigned long long ordinal;  // this call's number among the calls of `verb`, from 1
  volatile unsigned long long phase;    // ipcheck_phase: where the role is
};
extern struct ipcheck_verb_mark_t ipcheck_verb_mark;
}

namespace ipcheck {
// Where a role process is, for the OS audit: descriptors and mappings the body creates are
// followed until the body releases them.
enum ipcheck_phase : unsigned long long { before_body = 0, in_body = 1, after_body = 2 };
inline void mark_phase(ipcheck_phase p) noexcept {
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
  ipcheck_verb_mark.phase = p;
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
}
}  // namespace ipcheck

namespace ipcheck {

class TracingAdapter final : public Adapter {
 public:
  explicit TracingAdapter(std::unique_ptr<Adapter> inner) : inner_(std::move(inner)) {}

  const std::map<std::string, unsigned long>& calls() const noexcept { return calls_; }
  // A kept role's next case counts its own calls (--reuse-roles).
  void reset_calls() noexcept { calls_.clear(); }
  Adapter& inner() noexcept { return *inner_; }

  Outcome prepare(const AdapterConfig& c) override;  // traced as part of init, not counted as a call
  Outcome init(const AdapterConfig& c) override;
  AdapterInfo info() override { return inner_->info(); }
  std::size_t device_count() override { return inner_->device_count(); }
  Result<DevPtr> alloc(int d, std::size_t b, MemKind k) override;
  Outcome free(DevPtr p) override;
  Outcome write(DevPtr d, std::span<const std::byte> s) override;
  Outcome read(DevPtr s, std::span<std::byte> d) override;
  Result<Exported> mem_get(DevPtr p) override;
  Outcome mem_put(ObjectId id) override;
  Result<DevPtr> mem_open(std::span<const std::byte> b, int fd, int d, std::uint64_t f) override;
  Outcome mem_close(DevPtr p) override;
  std::size_t phys_granularity(int d) override { return inner_->phys_granularity(d); }
  Result<ObjectId> phys_create(int d, std::size_t b, bool ipc) override;
  Result<Exported> phys_get(ObjectId pm) override;
  Outcome phys_put(ObjectId id) override;
  Result<ObjectId> phys_open(std::span<const std::byte> b, int fd, int d) override;
  Outcome phys_close(ObjectId pm) override;
  Outcome phys_retain(ObjectId pm) override;
  Outcome phys_release(ObjectId pm) override;
  Result<std::size_t> phys_size(ObjectId pm) override;
  Result<bool> phys_ipc_enabled(ObjectId pm) override;
  Result<DevPtr> vm_reserve(int d, std::size_t b) override;
  Outcome vm_free(DevPtr p, std::size_t b) override;
  Outcome vm_map(DevPtr p, std::size_t b, ObjectId pm, std::size_t o) override;
  Outcome vm_unmap(DevPtr p, std::size_t b) override;
  Result<ObjectId> event_create(int d, EventFlags f) override;
  Result<Exported> event_get(ObjectId e) override;
  Outcome event_put(ObjectId id) override;
  Result<ObjectId> event_open(std::span<const std::byte> b, int fd, int d) override;
  Outcome event_signal(ObjectId e) override;
  Outcome event_reset(ObjectId e) override;
  Result<bool> event_query(ObjectId e) override;
  Result<bool> event_wait(ObjectId e, std::chrono::nanoseconds t) override;
  Outcome event_retain(ObjectId e) override;
  Outcome event_release(ObjectId e) override;
  Result<std::uint64_t> native_identity(ObjectId id) override;
  Outcome native(const std::string& what, const std::map<std::string, std::string>& args) override;
  // Not a verb: no call of the runtime, nothing traced; the inner adapter's answer.
  OpenInput last_open_input(const std::string& verb, std::span<const std::byte> given) override {
    return inner_->last_open_input(verb, given);
  }

 private:
  // Marks `verb` running for the duration of one call.
  class Scope {
   public:
    Scope(TracingAdapter& t, const char* verb, bool count = true);
    ~Scope();
  };
  std::unique_ptr<Adapter> inner_;
  std::map<std::string, unsigned long> calls_;
};

}  // namespace ipcheck
