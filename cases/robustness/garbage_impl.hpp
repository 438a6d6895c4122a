// What the rb.open.garbage case's three files share (private to cases/robustness):
// garbage.cpp (the case: its producer, which hands the variants out to on-demand consumers,
// and its registration), garbage_variants.cpp (the variants, and the judging of the verdicts
// the consumers wrote down) and garbage_consumer.cpp (a consumer, which opens the variants
// one by one and writes down each verdict). garbage.cpp's opening comment says what the
// case checks.
#pragma once

#include <sys/mman.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "kinds.hpp"

namespace ipcheck::catalog::robustness_garbage {

using Bytes = std::vector<std::byte>;

inline constexpr const char* kClause = "rb.open.garbage";
inline constexpr std::uint64_t kTargetSeed = 0x6a7b, kDecoySeed = 0x6a7c;  // odd: a signaled event; even: clear

// Where a variant's descriptor comes from, for handles that travel with one (the real
// handle bytes, another descriptor): what the runtime's import does with a descriptor that
// is not its export's.
enum class Descriptor : std::uint8_t { real, closed, out_of_range, dev_null, pipe, socket, eventfd, plain_memfd, decoy };

struct Variant {
  std::string family;
  std::string name;
  Bytes bytes;
  Descriptor fd = Descriptor::real;
};

// Every variant of `good` (garbage_variants.cpp), in the same order in the producer and in
// every consumer: a verdict is written down and read back by its index.
std::vector<Variant> all_variants(Role& r, HandleKind kind, const Bytes& good, const Bytes& decoy, bool target_fd,
                                  bool decoy_fd);

// ---- Every variant is judged by a consumer whose process and context are alive. The
// producer hands the variants out in order to consumer0, consumer1, ...: each opens them
// one by one from where the last stopped and writes each verdict into a shared page
// (before an open, "in flight"; after it, what happened). A consumer whose context a
// variant broke (the open or the probe after it answers device_lost, or any failure of
// the probe) stops there; one killed by a signal stops wherever its last open began. The
// next consumer resumes after that variant, so nothing is counted after a lost context.
enum class State : std::uint8_t { untried = 0, in_flight, refused, opened_target, opened_wrong, context_lost, killed };

struct Verdict {
  State state;
  std::uint8_t by;    // reports::Decider of the deciding call
  std::uint8_t errc;  // Errc
  std::uint8_t pad = 0;
  std::uint32_t micros;  // how long the open took
  std::int64_t native;
  char native_name[40];
  char call[40];
  char detail[120];  // what a wrong open mapped; how the context was lost
};
static_assert(sizeof(Verdict) == 216);

struct SharedVerdicts {
  Verdict* v = nullptr;
  std::size_t n = 0;
  unique_fd fd;
  SharedVerdicts() = default;
  SharedVerdicts(const SharedVerdicts&) = delete;
  ~SharedVerdicts() {
    if (v) ::munmap(v, n * sizeof(Verdict));
  }
  bool map(std::size_t count) {
    n = count;
    void* p = ::mmap(nullptr, std::max<std::size_t>(1, n) * sizeof(Verdict), PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0);
    if (p == MAP_FAILED) return false;
    v = static_cast<Verdict*>(p);
    return true;
  }
};

inline void put_text(char* dst, std::size_t cap, const std::string& s) {
  const std::size_t n = std::min(cap - 1, s.size());
  std::memcpy(dst, s.data(), n);
  dst[n] = '\0';
}

// The producer's verdicts on what the consumers wrote down (garbage_variants.cpp): the checks
// per family, every variant judged, the slowest open. `consumers_used`: how many consumer
// processes the case started.
void judge(Role& r, HandleKind kind, const std::vector<Variant>& variants, const SharedVerdicts& shared, int consumers_used);

// Every byte of the handle changed alone was judged by a live consumer (garbage_variants.cpp).
void check_every_byte(Role& r, const std::vector<Variant>& variants, const SharedVerdicts& shared, const Bytes& good);

// One consumer's role body (garbage_consumer.cpp).
// `cache`: warm (the real handle opened and closed before the garbage) or held (kept open).
void consumer(Role& r, HandleKind kind, Cache cache);

}  // namespace ipcheck::catalog::robustness_garbage
