// Forged handles for robustness cases. Only here do case bodies touch ipcref, and only
// its record codec, when the adapter says its handles are ipcref/1 records; with any
// other layout the cases that need forging skip ("handle layout is opaque").
#pragma once

#include "../common.hpp"
#include "ipcref/record.hpp"

namespace ipcheck::catalog {

using Record = ipcref::record::fields;

// True when the adapter's handle bytes are ipcref/1 records that can be decoded and forged.
bool forgeable(Role& r);
// Skips the case unless forgeable(r).
void need_forgeable(Role& r);

// The fields of handle bytes (64 bytes of ipcref/1); ends the role on another size.
Record decode_record(Role& r, std::span<const std::byte> bytes, std::string_view clause);
// The bytes of `f`, with a checksum that matches: a forgery the framing check accepts.
std::vector<std::byte> encode_record(const Record& f);

}  // namespace ipcheck::catalog
