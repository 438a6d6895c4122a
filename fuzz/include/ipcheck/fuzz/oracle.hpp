// The oracle: an open of mutated bytes either fails cleanly, or succeeds and maps exactly
// one live export whose canary reads back in full at the size the handle claims; after
// close nothing is left (no descriptor, no mapping). Everything else is a finding.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ipcheck/fuzz/canary.hpp"

namespace ipcheck::fuzz {

enum class Verdict : std::uint8_t {
  rejected,            // open failed with an error code: clean
  mapped,              // open mapped exactly one live export, canary intact: clean
  crash,               // the consumer died by a signal (or exited) during the open
  hang,                // the open did not return within the hang limit
  fd_leak,             // a descriptor was left open after the verb (or close) returned
  mapping_leak,        // the mapping is still there after close
  confused_deputy,     // it mapped an allocation that was never exported (clause rb.open.confused_deputy)
  stale_export,        // it mapped an allocation whose export was put (clause rb.put.revokes)
  wrong_offset,        // it mapped an exported allocation from a place no export starts
  wrong_size,          // the mapping is shorter than the export, or the handle claims another size
  unknown_mapping,     // it mapped memory that holds no canary of the campaign
  corrupt_mapping,     // it mapped an export, but the bytes differ from its canary part-way
  unreadable_mapping,  // open succeeded but the pointer it returned is not readable
  close_failed,        // close of a mapping open returned failed
  context_lost,        // after this open the runtime answers device_lost: the process's context is poisoned
  map_refused,         // --target physical: vm_map of a legal range of an unchanged live export, opened, failed
};
inline constexpr int kVerdictCount = static_cast<int>(Verdict::map_refused) + 1;

const char* verdict_name(Verdict v) noexcept;
std::optional<Verdict> parse_verdict(const std::string& name) noexcept;
inline bool is_finding(Verdict v) noexcept { return v != Verdict::rejected && v != Verdict::mapped; }
// The catalog clause a finding of kind `v` of a campaign over `target` handles breaks: for
// "physical" the place and extent of a mapping are vm_map's (sycl.phys.map.offset), not
// open's; for "event" a state that does not travel breaks ur.event.bidirectional and a
// failed release ur.event.release.
const char* verdict_clause(Verdict v, std::string_view target = "memory") noexcept;

// Reads memory an open returned (through the adapter: a GPU pointer needs a copy).
class MemoryReader {
 public:
  virtual ~MemoryReader() = default;
  virtual bool read(std::uint64_t address, std::span<std::byte> out) = 0;
};

struct Judgement {
  Verdict verdict = Verdict::mapped;
  std::string detail;
  int alloc = -1;          // the allocation it mapped, when known
  std::uint64_t offset = 0;  // and where in it the mapping starts
};

// Judges a successful open that returned `address`. `claimed_size` is the size the
// handle states, when the layout says where. `scratch` is reused between calls.
Judgement judge_mapping(std::span<const CanaryAlloc> table, std::uint64_t address,
                        std::optional<std::uint64_t> claimed_size, MemoryReader& reader,
                        std::vector<std::byte>& scratch);

// Lowest descriptor number free in this process (a leak after a verb raises it).
int lowest_free_fd() noexcept;
// True when the page holding `address` is mapped in this process.
bool host_mapped(std::uint64_t address) noexcept;

}  // namespace ipcheck::fuzz
