#include "forge.hpp"

namespace ipcheck::catalog {

bool forgeable(Role& r) { return r.adapter().info().handle_layout == "ipcref/1"; }

void need_forgeable(Role& r) {
  if (!forgeable(r))
    r.skip("handle layout is opaque: cannot forge (adapter reports layout '" + r.adapter().info().handle_layout +
           "'; only ipcref/1 records are forged)");
}

Record decode_record(Role& r, std::span<const std::byte> bytes, std::string_view clause) {
  if (bytes.size() != ipcref::record::size)
    r.require(false, clause,
              "an ipcref/1 handle is " + std::to_string(ipcref::record::size) + " bytes; this one has " +
                  std::to_string(bytes.size()));
  return ipcref::record::decode(bytes);
}

std::vector<std::byte> encode_record(const Record& f) {
  const auto b = ipcref::record::encode(f);
  return {b.begin(), b.end()};
}

}  // namespace ipcheck::catalog
