#include "ipcheck/adapter.hpp"

#include <algorithm>

namespace ipcheck {

const char* errc_name(Errc e) noexcept {
  switch (e) {
    case Errc::success: return "success";
    case Errc::invalid: return "invalid";
    case Errc::feature_not_supported: return "feature_not_supported";
    case Errc::exporter_gone: return "exporter_gone";
    case Errc::permission_denied: return "permission_denied";
    case Errc::exhausted: return "exhausted";
    case Errc::timeout: return "timeout";
    case Errc::not_implemented: return "not_implemented";
    case Errc::device_lost: return "device_lost";
    case Errc::other: return "other";
  }
  return "unknown";
}

const char* decided_name(Decided d) noexcept { return d == Decided::runtime ? "runtime" : "adapter"; }

const char* mem_kind_name(MemKind k) noexcept {
  switch (k) {
    case MemKind::device: return "device";
    case MemKind::host: return "host";
    case MemKind::shared: return "shared";
  }
  return "unknown";
}

std::string Outcome::describe() const {
  std::string s = errc_name(code);
  if (!native_name.empty()) s += " (" + native_name + ")";
  if (!message.empty()) s += ": " + message;
  return s;
}

Outcome Adapter::missing(const char* verb) const {
  return Outcome::failure(Errc::not_implemented,
                          "adapter '" + adapter_name_ + "' has no verb " + verb);
}

Result<DevPtr> Adapter::alloc(int, std::size_t, MemKind) { return {missing("alloc")}; }
Outcome Adapter::free(DevPtr) { return missing("free"); }
Outcome Adapter::write(DevPtr, std::span<const std::byte>) { return missing("write"); }
Outcome Adapter::read(DevPtr, std::span<std::byte>) { return missing("read"); }
Result<Exported> Adapter::mem_get(DevPtr) { return {missing("mem_get")}; }
Outcome Adapter::mem_put(ObjectId) { return missing("mem_put"); }
Result<DevPtr> Adapter::mem_open(std::span<const std::byte>, int, int, std::uint64_t) { return {missing("mem_open")}; }
Outcome Adapter::mem_close(DevPtr) { return missing("mem_close"); }
std::size_t Adapter::phys_granularity(int) { return 4096; }
Result<ObjectId> Adapter::phys_create(int, std::size_t, bool) { return {missing("phys_create")}; }
Result<Exported> Adapter::phys_get(ObjectId) { return {missing("phys_get")}; }
Outcome Adapter::phys_put(ObjectId) { return missing("phys_put"); }
Result<ObjectId> Adapter::phys_open(std::span<const std::byte>, int, int) { return {missing("phys_open")}; }
Outcome Adapter::phys_close(ObjectId) { return missing("phys_close"); }
Outcome Adapter::phys_retain(ObjectId) { return missing("phys_retain"); }
Outcome Adapter::phys_release(ObjectId) { return missing("phys_release"); }
Result<std::size_t> Adapter::phys_size(ObjectId) { return {missing("phys_size")}; }
Result<bool> Adapter::phys_ipc_enabled(ObjectId) { return {missing("phys_ipc_enabled")}; }
Result<DevPtr> Adapter::vm_reserve(int, std::size_t) { return {missing("vm_reserve")}; }
Outcome Adapter::vm_free(DevPtr, std::size_t) { return missing("vm_free"); }
Outcome Adapter::vm_map(DevPtr, std::size_t, ObjectId, std::size_t) { return missing("vm_map"); }
Outcome Adapter::vm_unmap(DevPtr, std::size_t) { return missing("vm_unmap"); }
Result<ObjectId> Adapter::event_create(int, EventFlags) { return {missing("event_create")}; }
Result<Exported> Adapter::event_get(ObjectId) { return {missing("event_get")}; }
Outcome Adapter::event_put(ObjectId) { return missing("event_put"); }
Result<ObjectId> Adapter::event_open(std::span<const std::byte>, int, int) { return {missing("event_open")}; }
Outcome Adapter::event_signal(ObjectId) { return missing("event_signal"); }
Outcome Adapter::event_reset(ObjectId) { return missing("event_reset"); }
Result<bool> Adapter::event_query(ObjectId) { return {missing("event_query")}; }
Result<bool> Adapter::event_wait(ObjectId, std::chrono::nanoseconds) { return {missing("event_wait")}; }
Outcome Adapter::event_retain(ObjectId) { return missing("event_retain"); }
Outcome Adapter::event_release(ObjectId) { return missing("event_release"); }
Result<std::uint64_t> Adapter::native_identity(ObjectId) { return {missing("native_identity")}; }
Outcome Adapter::native(const std::string& what, const std::map<std::string, std::string>&) {
  return Outcome::failure(Errc::not_implemented, "adapter '" + adapter_name_ + "' has no native call " + what);
}

namespace {
std::vector<AdapterDesc>& registry() {
  static std::vector<AdapterDesc> r;
  return r;
}
}  // namespace

void register_adapter(AdapterDesc desc) {
  auto& r = registry();
  r.push_back(std::move(desc));
  std::sort(r.begin(), r.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
}

const std::vector<AdapterDesc>& adapters() { return registry(); }

const AdapterDesc* find_adapter(const std::string& name) {
  for (const auto& a : registry())
    if (a.name == name) return &a;
  return nullptr;
}

std::string option_one_of(const std::string& value, const std::vector<std::string>& allowed) {
  for (const auto& a : allowed)
    if (value == a) return {};
  std::string list;
  for (std::size_t i = 0; i < allowed.size(); ++i)
    list += (i == 0 ? "" : i + 1 == allowed.size() ? " or " : ", ") + allowed[i];
  return "use " + list;
}

std::string option_whole_number(const std::string& value, unsigned long max) {
  const std::string want = "give a whole number from 0 to " + std::to_string(max);
  if (value.empty() || value.size() > 10 || value.find_first_not_of("0123456789") != std::string::npos) return want;
  return std::stoul(value) <= max ? std::string() : want;
}

}  // namespace ipcheck
