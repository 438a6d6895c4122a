#include "forge.hpp"

#include <algorithm>

namespace ipcheck::catalog {

namespace {
constexpr const char* kFdFirst = "ze-ipcheck-fd/1";

bool fd_first(Role& r) { return r.adapter().info().handle_layout == kFdFirst; }
}  // namespace

bool forgeable(Role& r) {
  const std::string layout = r.adapter().info().handle_layout;
  return layout == "ipcref/1" || layout == kFdFirst;
}

void need_forgeable(Role& r) {
  if (!forgeable(r))
    r.skip("handle layout '" + r.adapter().info().handle_layout +
           "' is not an ipcref record: cannot forge records (ipcref/1 and ze-ipcheck-fd/1 are)");
}

Record decode_record(Role& r, std::span<const std::byte> bytes, std::string_view clause) {
  if (bytes.size() != ipcref::record::size) {
    SetupSteps setup(r);
    r.require(false, clause,
              "an ipcref/1 handle is " + std::to_string(ipcref::record::size) + " bytes; this one has " +
                  std::to_string(bytes.size()));
  }
  if (!fd_first(r)) return ipcref::record::decode(bytes);
  // fd-first: the descriptor in 0..3 stands where the record's magic was.
  ipcref::record::bytes copy;
  std::copy(bytes.begin(), bytes.end(), copy.begin());
  store_le(copy.data(), 4, ipcref::record::magic);
  return ipcref::record::decode(copy);
}

std::vector<std::byte> encode_record(const Record& f, std::span<const std::byte> like) {
  const auto b = ipcref::record::encode(f);
  std::vector<std::byte> out(b.begin(), b.end());
  // An fd-first handle: the checksum covers the magic, the descriptor replaces it.
  if (like.size() == ipcref::record::size && load_le(like.data(), 4) != ipcref::record::magic)
    std::copy(like.begin(), like.begin() + 4, out.begin());
  return out;
}

const HandleLayout* known_layout(Role& r, const std::string& kind, std::size_t handle_bytes) {
  if (handle_bytes == 0 || handle_bytes > 256) return nullptr;
  const HandleLayout& l = layout_for(r.adapter().info().layout_of(kind), handle_bytes);
  return l.knowledge == "opaque" || l.size != handle_bytes ? nullptr : &l;
}

bool forge_field(const HandleLayout& l, std::vector<std::byte>& bytes, FieldRole role, std::uint64_t value) {
  const int i = l.find(role);
  if (i < 0 || bytes.size() < l.size) return false;
  l.set(bytes, i, value);
  l.reseal(bytes);
  return true;
}

std::uint64_t field_value(const HandleLayout& l, std::span<const std::byte> bytes, FieldRole role) {
  const int i = l.find(role);
  return i < 0 || bytes.size() < l.size ? 0 : l.get(bytes, i);
}

}  // namespace ipcheck::catalog
