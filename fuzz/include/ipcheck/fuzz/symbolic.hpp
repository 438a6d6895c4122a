// Reproducers that outlive the campaign that found them. Handle bytes name live things
// (an exporter's pid, its descriptor numbers, a random token) that differ in every run,
// so an input is stored relative to the export it derives from: the fields that differ,
// each either a literal or the name of a live value it was taken from
// ("producer.export[2].token", "producer.alloc[3].fd", "worker.pid"), whether the
// checksum was recomputed, the length, and the descriptor passed with it. Replaying
// resolves those names against the new campaign's exports.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ipcheck/fuzz/mutator.hpp"

namespace ipcheck::fuzz {

struct FieldChange {
  std::string field;
  std::uint64_t value = 0;  // as tried
  std::string source;       // live value it was taken from; empty for a literal
};

struct Symbolic {
  std::string base;                  // "producer.export[1]"
  std::vector<FieldChange> changes;  // fields that differ from the base (checksum only when left stale)
  bool resealed = false;             // the checksum was recomputed over the changed fields
  std::size_t length = 0;            // bytes handed to open
  std::vector<std::byte> tail;       // bytes past the layout's size
  std::string descriptor;            // descriptor passed: "" none, "foreign", or a base name
  // --target physical: where the opened object is mapped (kept as is by minimisation).
  std::uint64_t map_offset = 0;
  std::uint64_t map_size = 0;
};

// Describes `in` relative to its base.
Symbolic symbolize(const MutatorContext& ctx, const Input& in);
// Rebuilds the input in the campaign `ctx`; empty (and `why` set) when a name is missing.
std::optional<Input> resolve(const MutatorContext& ctx, const Symbolic& s, std::string* why);

// "fd := producer.alloc[3].fd (7); checksum resealed"
std::string describe(const Symbolic& s, const HandleLayout& layout);
// Names of what differs from the base: fields, plus "length", "tail", "descriptor".
std::vector<std::string> mutated_fields(const Symbolic& s, const MutatorContext& ctx);
// `s` with only the differences named in `keep` (names as mutated_fields gives them).
Symbolic restrict_to(const Symbolic& s, const std::vector<std::string>& keep, const MutatorContext& ctx);
// Variants with one difference fewer, for minimisation.
std::vector<Symbolic> simplifications(const Symbolic& s, const MutatorContext& ctx);

nlohmann::json to_json(const Symbolic& s);
// Throws std::invalid_argument naming the field ("input.changes[2].value ...") when `j`
// does not have the shape to_json writes.
Symbolic symbolic_from_json(const nlohmann::json& j);
// The longest input a reproducer may describe (bytes).
inline constexpr std::size_t kMaxSymbolicLength = 65536;
// The most field changes a reproducer may list (no layout has this many fields).
inline constexpr std::size_t kMaxSymbolicChanges = 256;

// The default descriptor of a base: its own when descriptors travel, else none.
int default_descriptor(const MutatorContext& ctx, std::size_t base);
// Index of the base named `name`, or -1.
int find_base(const MutatorContext& ctx, const std::string& name);

std::string to_hex(std::span<const std::byte> bytes);
// A number as 0x-prefixed hex: "0x7f12c0000000".
std::string hexnum(std::uint64_t v);
std::vector<std::byte> from_hex(const std::string& hex);  // throws std::invalid_argument

}  // namespace ipcheck::fuzz
