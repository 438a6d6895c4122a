#include "common.hpp"

#include <cstdio>

namespace ipcheck::catalog {

Owned alloc_filled(Role& r, std::size_t bytes, std::uint64_t seed, std::string_view clause, int device, MemKind kind) {
  Adapter& a = r.adapter();
  auto res = a.alloc(device, bytes, kind);
  r.skip_if_unsupported(res.outcome, std::string("alloc of ") + mem_kind_name(kind) + " memory");
  Owned mem = Owned::allocation(a, r.require(res, clause, "alloc " + size_name(bytes)));
  if (!fill(r, mem.get(), bytes, seed, clause, "fill the allocation")) throw RoleAbort{"fill failed"};
  return mem;
}

bool fill(Role& r, DevPtr p, std::size_t bytes, std::uint64_t seed, std::string_view clause, const std::string& what) {
  const auto data = pattern(seed, bytes);
  const Outcome o = r.adapter().write(p, data);
  if (o.ok()) return true;
  return r.check_ok(o, clause, what);
}

bool verify(Role& r, DevPtr p, std::size_t bytes, std::uint64_t seed, std::string_view clause, const std::string& what) {
  std::vector<std::byte> got(bytes);
  const Outcome o = r.adapter().read(p, got);
  if (!o.ok()) return r.check_ok(o, clause, what + ": read " + size_name(bytes));
  const std::size_t bad = first_mismatch(got, seed);
  if (bad == static_cast<std::size_t>(-1)) return r.check(true, clause, what + ": " + size_name(bytes) + " as written");
  const auto want = pattern(seed, 1, bad);
  return r.check(false, clause,
                 what + ": byte " + std::to_string(bad) + " of " + std::to_string(bytes) + " is " +
                     hex(static_cast<unsigned>(got[bad])) + ", expected " + hex(static_cast<unsigned>(want[0])) +
                     " (wrong offset, stale or foreign memory)");
}

Owned export_memory(Role& r, DevPtr p, Exported& out, std::string_view clause) {
  auto res = r.adapter().mem_get(p);
  r.skip_if_unsupported(res.outcome, "mem_get");
  out = r.require(std::move(res), clause, "mem_get");
  return Owned::mem_export(r.adapter(), out.id);
}

Owned open_received(Role& r, const Received& h, std::string_view clause, const std::string& what, int device) {
  auto res = r.adapter().mem_open(h.bytes, h.fd.get(), device);
  return Owned::mapping(r.adapter(), r.require(res, clause, what));
}

void need_devices(Role& r, std::size_t n) {
  if (r.adapter().device_count() < n)
    r.skip("needs " + std::to_string(n) + " devices, the adapter has " + std::to_string(r.adapter().device_count()));
}

std::string hex(std::uint64_t v) {
  char b[24];
  std::snprintf(b, sizeof b, "%#llx", static_cast<unsigned long long>(v));
  return b;
}

std::string size_name(std::size_t bytes) {
  if (bytes >= (1u << 20) && bytes % (1u << 20) == 0) return std::to_string(bytes >> 20) + " MiB";
  if (bytes >= 1024 && bytes % 1024 == 0) return std::to_string(bytes >> 10) + " KiB";
  return std::to_string(bytes) + " B";
}

}  // namespace ipcheck::catalog
