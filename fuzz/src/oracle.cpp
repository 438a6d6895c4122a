#include "ipcheck/fuzz/oracle.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "ipcheck/fuzz/layout.hpp"
#include "ipcheck/fuzz/symbolic.hpp"

namespace ipcheck::fuzz {
namespace {

constexpr const char* kNames[kVerdictCount] = {
    "rejected",        "mapped",       "crash",        "hang",           "fd_leak",
    "mapping_leak",    "confused_deputy", "stale_export", "wrong_offset", "wrong_size",
    "unknown_mapping", "corrupt_mapping", "unreadable_mapping", "close_failed",
    "context_lost",    "map_refused"};

// The largest live export of the set-up: no correct mapping is longer.
std::uint64_t largest_live_export(std::span<const CanaryAlloc> table) {
  std::uint64_t n = 0;
  for (const auto& a : table)
    for (const auto& r : a.live) n = std::max<std::uint64_t>(n, r.size);
  return n;
}

std::string list_offsets(const std::vector<Range>& rs) {
  std::string s;
  for (const auto& r : rs) s += (s.empty() ? "" : ", ") + std::to_string(r.offset);
  return s.empty() ? "none" : s;
}

}  // namespace

const char* verdict_name(Verdict v) noexcept { return kNames[static_cast<int>(v)]; }

std::optional<Verdict> parse_verdict(const std::string& name) noexcept {
  for (int i = 0; i < kVerdictCount; ++i)
    if (name == kNames[i]) return static_cast<Verdict>(i);
  return std::nullopt;
}

const char* verdict_clause(Verdict v, std::string_view target) noexcept {
  if (target == "event") switch (v) {
      case Verdict::corrupt_mapping:
        return "ur.event.bidirectional";
      case Verdict::close_failed:
        return "ur.event.release";
      default:
        break;
    }
  if (target == "physical") switch (v) {
      case Verdict::wrong_offset:
      case Verdict::wrong_size:
      case Verdict::map_refused:
        return "sycl.phys.map.offset";
      case Verdict::close_failed:
        return "sycl.phys.roundtrip";
      default:
        break;
    }
  switch (v) {
    case Verdict::crash:
    case Verdict::hang:
      return "rb.open.garbage";
    case Verdict::fd_leak:
    case Verdict::mapping_leak:
      return "rb.close.no_leak";
    case Verdict::confused_deputy:
      return "rb.open.confused_deputy";
    case Verdict::stale_export:
      return "rb.put.revokes";
    case Verdict::wrong_size:
      return "sycl.mem.open.size";
    case Verdict::close_failed:
      return "sycl.mem.close";
    case Verdict::map_refused:
      return "sycl.phys.map.offset";
    case Verdict::wrong_offset:
    case Verdict::unknown_mapping:
    case Verdict::corrupt_mapping:
    case Verdict::unreadable_mapping:
    case Verdict::context_lost:
      return "rb.open.garbage";
    default:
      return "";
  }
}

Judgement judge_mapping(std::span<const CanaryAlloc> table, std::uint64_t address,
                        std::optional<std::uint64_t> claimed_size, MemoryReader& reader,
                        std::vector<std::byte>& scratch) {
  Judgement j;
  std::byte head[32];
  // A handle that states its size (within the exports') is read whole at once: a correct
  // mapping then costs one read, not two. When that read fails, the judgement goes on as if
  // it had not been tried (the first 32 bytes, then the export's own size), so no verdict
  // depends on it.
  std::size_t fetched = 0;
  if (claimed_size && *claimed_size >= sizeof head && *claimed_size <= largest_live_export(table)) {
    scratch.resize(static_cast<std::size_t>(*claimed_size));
    if (reader.read(address, scratch)) fetched = scratch.size();
  }
  if (fetched) {
    std::memcpy(head, scratch.data(), sizeof head);
  } else if (!reader.read(address, head)) {
    j.verdict = Verdict::unreadable_mapping;
    j.detail = "open succeeded and returned " + hexnum(address) + ", but its first " + std::to_string(sizeof head) +
               " bytes cannot be read";
    return j;
  }
  const auto id = identify(table, address, head);
  if (!id) {
    j.verdict = Verdict::unknown_mapping;
    j.detail = "open mapped memory at " + hexnum(address) + " that holds no allocation's canary (first bytes " +
               hexnum(load_le(head, 8)) + ")";
    return j;
  }
  const CanaryAlloc& a = table[id->alloc];
  j.alloc = static_cast<int>(id->alloc);
  j.offset = id->offset;
  const std::string where = a.name + " from offset " + std::to_string(id->offset);
  if (a.decoy) {
    j.verdict = Verdict::confused_deputy;
    j.detail = "open mapped " + where + ", an allocation of the exporter that was never exported";
    return j;
  }
  const Range* e = nullptr;
  for (const auto& r : a.live)
    if (r.offset == id->offset) e = &r;
  if (!e) {
    for (const auto& r : a.revoked)
      if (r.offset == id->offset) {
        j.verdict = Verdict::stale_export;
        j.detail = "open mapped " + where + ", whose export was put before the campaign";
        return j;
      }
    j.verdict = Verdict::wrong_offset;
    j.detail = "open mapped " + where + ", where no export starts (exports start at " + list_offsets(a.live) + ")";
    return j;
  }
  if (claimed_size && *claimed_size != e->size) {
    j.verdict = Verdict::wrong_size;
    j.detail = "open mapped " + where + " (an export of " + std::to_string(e->size) + " bytes) for a handle claiming " +
               std::to_string(*claimed_size) + " bytes";
    return j;
  }
  // Here a stated size equals the export's (else wrong_size above), so what was fetched is it.
  if (fetched != e->size) scratch.resize(e->size);
  if (fetched != e->size && !reader.read(address, scratch)) {
    j.verdict = Verdict::wrong_size;
    j.detail = "open mapped " + where + ", but fewer than the export's " + std::to_string(e->size) + " bytes are readable";
    return j;
  }
  if (const std::size_t bad = canary_mismatch(a.salt, e->offset, scratch); bad != static_cast<std::size_t>(-1)) {
    j.verdict = Verdict::corrupt_mapping;
    j.detail = "open mapped " + where + ", but byte " + std::to_string(bad) + " of its " + std::to_string(e->size) +
               " differs from the canary";
    return j;
  }
  j.verdict = Verdict::mapped;
  return j;
}

int lowest_free_fd() noexcept {
  int fd = ::fcntl(0, F_DUPFD_CLOEXEC, 0);
  if (fd < 0) fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);  // no descriptor 0 to copy
  if (fd >= 0) ::close(fd);
  return fd;
}

bool host_mapped(std::uint64_t address) noexcept {
  static const std::uint64_t page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
  unsigned char v;
  return ::mincore(reinterpret_cast<void*>(address & ~(page - 1)), 1, &v) == 0;
}

}  // namespace ipcheck::fuzz
