// Mutators of handle bytes. Field-aware ones know the layout: boundary values, the same
// field from other real exports, pid and descriptor swaps (coherent identities: pid with
// its guard), size and offset edges, version and kind; blind ones flip bits, set bytes,
// truncate, extend and splice. Each input starts from a real export (or a corpus entry
// derived from one) and is either resealed (so checks past the checksum are reached) or
// left with its stale checksum. The same (seed, start) gives the same input.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "ipcheck/fuzz/layout.hpp"
#include "ipcheck/fuzz/rng.hpp"

namespace ipcheck::fuzz {

inline constexpr std::size_t kMaxInput = 256;

// Descriptor choices of an input besides "the received descriptor of base k" (k >= 0).
inline constexpr int kNoDescriptor = -1;
inline constexpr int kForeignDescriptor = -2;  // a descriptor of the importer that no export sent

// One input: the bytes to open, the export it derives from, the descriptor passed with it.
// `bytes` holds a full buffer; only the first `length` bytes are handed to open, but a
// checksum is always computed over the first layout.size bytes (truncation comes last).
struct Input {
  std::array<std::byte, kMaxInput> bytes{};
  std::uint16_t length = 0;
  std::uint16_t base = 0;
  std::int16_t descriptor = kNoDescriptor;
  // --target physical: where in the opened object vm_map maps, and how many bytes (0, 0
  // for the other targets).
  std::uint64_t map_offset = 0;
  std::uint64_t map_size = 0;
  std::span<const std::byte> data() const noexcept { return {bytes.data(), length}; }
};

// A live value of the campaign that field-aware mutators may put in a field of the same
// role, and that reproducers refer to by name ("producer.alloc[3].fd", "worker.pid").
struct NamedValue {
  std::string name;
  FieldRole role = FieldRole::opaque;
  std::uint64_t value = 0;
};

struct MutatorContext {
  const HandleLayout* layout = nullptr;
  std::vector<Input> bases;             // real exports (live, revoked, the worker's own)
  std::vector<std::string> base_names;  // "producer.export[0]"
  std::vector<NamedValue> values;
  bool descriptors = false;             // descriptors travel with handles (SCM_RIGHTS)
  std::uint64_t page_size = 4096;
  // --target physical: the mapping granularity (0: other targets, no map range drawn) and
  // each base's object size (0 when the layout does not say).
  std::uint64_t map_granularity = 0;
  std::vector<std::uint64_t> map_sizes;
};

// What one call of mutate did (the unit tests check the mix of field-aware, resealed and blind inputs).
struct MutationInfo {
  bool field_aware = false;
  bool resealed = false;
  int ops = 0;
};

// The fields an input changed from the export it derives from, as a mask: bit f for layout
// field f (layouts have at most 32 fields: kMaxInput / 8), kLengthShorter or kLengthLonger for its
// length. The campaign's schedule demotes inputs by this class.
inline constexpr std::uint64_t kLengthShorter = 1ull << 62;
inline constexpr std::uint64_t kLengthLonger = 1ull << 63;
std::uint64_t changed_fields(const MutatorContext& ctx, const Input& in);
// "offset+pid", "bytes@24+length"; "" for an unchanged input.
std::string changed_fields_name(const HandleLayout& l, std::uint64_t mask);
// The mask of a name changed_fields_name wrote, for layout `l` (unknown names are ignored).
std::uint64_t changed_fields_mask(const HandleLayout& l, const std::string& name);

class Mutator {
 public:
  explicit Mutator(const MutatorContext& ctx);

  // Fills `out` from `start` and a few mutations drawn from `rng`.
  MutationInfo mutate(Rng& rng, const Input& start, Input& out) const;

  // Single operations (public for tests).
  void field_op(Rng& rng, Input& in, int field, bool& touched_checksum) const;
  void blind_op(Rng& rng, Input& in) const;
  // The map offset and size of a physical input: within, at and beyond the object's edges.
  void map_op(Rng& rng, Input& in) const;

 private:
  std::uint64_t boundary(Rng& rng, const LayoutField& f, const Input& in) const;
  std::uint64_t role_value(Rng& rng, FieldRole role, std::uint64_t fallback) const;
  const MutatorContext& ctx_;
  std::vector<std::vector<std::size_t>> by_role_;  // FieldRole -> indexes into ctx.values
};

}  // namespace ipcheck::fuzz
