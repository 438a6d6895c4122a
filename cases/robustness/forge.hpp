// Forged handles for robustness cases. Only here do case bodies build handle bytes
// themselves, and only from what ipcheck knows of the adapter's handle layout
// (ipcheck/handle_layout.hpp): the ipcref record (ref; our Level Zero driver's opaque
// handles), our Level Zero driver's fd-first handles (the record's bytes after the
// descriptor), and what the fuzzer learned of others (CUDA's memory handle). With an
// opaque layout the cases that need forging skip, saying so.
#pragma once

#include "../common.hpp"
#include "ipcheck/handle_layout.hpp"
#include "ipcref/record.hpp"

namespace ipcheck::catalog {

using Record = ipcref::record::fields;

// True when the adapter's handle bytes are ipcref/1 records, as they are or after the
// descriptor of an fd-first handle (ze-ipcheck-fd/1): decode_record/encode_record work.
bool forgeable(Role& r);
// Skips the case unless forgeable(r).
void need_forgeable(Role& r);

// The fields of handle bytes (64 bytes); ends the role on another size.
Record decode_record(Role& r, std::span<const std::byte> bytes, std::string_view clause);
// The bytes of `f`, with a checksum that matches: a forgery the framing check accepts.
// `like` is a real handle of the same adapter: an fd-first handle keeps its descriptor.
std::vector<std::byte> encode_record(const Record& f, std::span<const std::byte> like = {});

// The adapter's layout for `kind` ("memory", "physical", "event") handles of
// `handle_bytes`, when ipcheck knows at least some of its fields (exact or partial) and the
// bytes have its size; nullptr otherwise.
const HandleLayout* known_layout(Role& r, const std::string& kind, std::size_t handle_bytes);

// `bytes` with field `role` set to `value` and the checksum made valid again where the
// layout has one. False (bytes unchanged) when the layout has no such field.
bool forge_field(const HandleLayout& l, std::vector<std::byte>& bytes, FieldRole role, std::uint64_t value);
std::uint64_t field_value(const HandleLayout& l, std::span<const std::byte> bytes, FieldRole role);

}  // namespace ipcheck::catalog
