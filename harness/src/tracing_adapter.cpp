#include "ipcheck/tracing_adapter.hpp"

#include <cstring>

extern "C" {
struct ipcheck_verb_mark_t ipcheck_verb_mark = {0, 0, {}, 0, 0};
}

namespace ipcheck {

namespace {
// Stable small ids for verbs, so the audit can count by verb without strings.
unsigned long long verb_id(const char* verb) {
  unsigned long long h = 1469598103934665603ull;
  for (const char* p = verb; *p; ++p) h = (h ^ static_cast<unsigned char>(*p)) * 1099511628211ull;
  return h;
}
}  // namespace

TracingAdapter::Scope::Scope(TracingAdapter& t, const char* verb, bool count) {
  unsigned long ordinal = 1;
  if (count) {
    ordinal = ++t.calls_[verb];
  } else if (const auto it = t.calls_.find(verb); it != t.calls_.end()) {
    ordinal = it->second + 1;  // the call it is the first part of
  }
  std::strncpy(ipcheck_verb_mark.verb, verb, sizeof ipcheck_verb_mark.verb - 1);
  ipcheck_verb_mark.verb_id = verb_id(verb);
  ipcheck_verb_mark.ordinal = ordinal;
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
  ipcheck_verb_mark.seq = ipcheck_verb_mark.seq + 1;  // odd: inside a verb
}

TracingAdapter::Scope::~Scope() {
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
  ipcheck_verb_mark.seq = ipcheck_verb_mark.seq + 1;  // even: between verbs
}

#define IPCHECK_TRACE(verb, call) \
  Scope scope(*this, verb);       \
  return inner_->call

Outcome TracingAdapter::prepare(const AdapterConfig& c) {
  Scope scope(*this, "init", false);  // init's first part: its system calls are init's
  return inner_->prepare(c);
}
Outcome TracingAdapter::init(const AdapterConfig& c) { IPCHECK_TRACE("init", init(c)); }
Result<DevPtr> TracingAdapter::alloc(int d, std::size_t b, MemKind k) { IPCHECK_TRACE("alloc", alloc(d, b, k)); }
Outcome TracingAdapter::free(DevPtr p) { IPCHECK_TRACE("free", free(p)); }
Outcome TracingAdapter::write(DevPtr d, std::span<const std::byte> s) { IPCHECK_TRACE("write", write(d, s)); }
Outcome TracingAdapter::read(DevPtr s, std::span<std::byte> d) { IPCHECK_TRACE("read", read(s, d)); }
Result<Exported> TracingAdapter::mem_get(DevPtr p) { IPCHECK_TRACE("mem_get", mem_get(p)); }
Outcome TracingAdapter::mem_put(ObjectId id) { IPCHECK_TRACE("mem_put", mem_put(id)); }
Result<DevPtr> TracingAdapter::mem_open(std::span<const std::byte> b, int fd, int d, std::uint64_t f) {
  IPCHECK_TRACE("mem_open", mem_open(b, fd, d, f));
}
Outcome TracingAdapter::mem_close(DevPtr p) { IPCHECK_TRACE("mem_close", mem_close(p)); }
Result<ObjectId> TracingAdapter::phys_create(int d, std::size_t b, bool ipc) {
  IPCHECK_TRACE("phys_create", phys_create(d, b, ipc));
}
Result<Exported> TracingAdapter::phys_get(ObjectId pm) { IPCHECK_TRACE("phys_get", phys_get(pm)); }
Outcome TracingAdapter::phys_put(ObjectId id) { IPCHECK_TRACE("phys_put", phys_put(id)); }
Result<ObjectId> TracingAdapter::phys_open(std::span<const std::byte> b, int fd, int d) {
  IPCHECK_TRACE("phys_open", phys_open(b, fd, d));
}
Outcome TracingAdapter::phys_close(ObjectId pm) { IPCHECK_TRACE("phys_close", phys_close(pm)); }
Outcome TracingAdapter::phys_retain(ObjectId pm) { IPCHECK_TRACE("phys_retain", phys_retain(pm)); }
Outcome TracingAdapter::phys_release(ObjectId pm) { IPCHECK_TRACE("phys_release", phys_release(pm)); }
Result<std::size_t> TracingAdapter::phys_size(ObjectId pm) { IPCHECK_TRACE("phys_size", phys_size(pm)); }
Result<bool> TracingAdapter::phys_ipc_enabled(ObjectId pm) { IPCHECK_TRACE("phys_ipc_enabled", phys_ipc_enabled(pm)); }
Result<DevPtr> TracingAdapter::vm_reserve(int d, std::size_t b) { IPCHECK_TRACE("vm_reserve", vm_reserve(d, b)); }
Outcome TracingAdapter::vm_free(DevPtr p, std::size_t b) { IPCHECK_TRACE("vm_free", vm_free(p, b)); }
Outcome TracingAdapter::vm_map(DevPtr p, std::size_t b, ObjectId pm, std::size_t o) {
  IPCHECK_TRACE("vm_map", vm_map(p, b, pm, o));
}
Outcome TracingAdapter::vm_unmap(DevPtr p, std::size_t b) { IPCHECK_TRACE("vm_unmap", vm_unmap(p, b)); }
Result<ObjectId> TracingAdapter::event_create(int d, EventFlags f) { IPCHECK_TRACE("event_create", event_create(d, f)); }
Result<Exported> TracingAdapter::event_get(ObjectId e) { IPCHECK_TRACE("event_get", event_get(e)); }
Outcome TracingAdapter::event_put(ObjectId id) { IPCHECK_TRACE("event_put", event_put(id)); }
Result<ObjectId> TracingAdapter::event_open(std::span<const std::byte> b, int fd, int d) {
  IPCHECK_TRACE("event_open", event_open(b, fd, d));
}
Outcome TracingAdapter::event_signal(ObjectId e) { IPCHECK_TRACE("event_signal", event_signal(e)); }
Outcome TracingAdapter::event_reset(ObjectId e) { IPCHECK_TRACE("event_reset", event_reset(e)); }
Result<bool> TracingAdapter::event_query(ObjectId e) { IPCHECK_TRACE("event_query", event_query(e)); }
Result<bool> TracingAdapter::event_wait(ObjectId e, std::chrono::nanoseconds t) {
  IPCHECK_TRACE("event_wait", event_wait(e, t));
}
Outcome TracingAdapter::event_retain(ObjectId e) { IPCHECK_TRACE("event_retain", event_retain(e)); }
Outcome TracingAdapter::event_release(ObjectId e) { IPCHECK_TRACE("event_release", event_release(e)); }
Result<std::uint64_t> TracingAdapter::native_identity(ObjectId id) { return inner_->native_identity(id); }
Outcome TracingAdapter::native(const std::string& what, const std::map<std::string, std::string>& args) {
  IPCHECK_TRACE("native", native(what, args));
}

}  // namespace ipcheck
