#include "ipcheck/fuzz/mutator.hpp"

#include <algorithm>
#include <cstring>
#include <initializer_list>

namespace ipcheck::fuzz {
namespace {

constexpr std::uint64_t kGeneric[] = {
    0,          1,          2,          3,          0x7f,        0x80,        0xff,
    0x100,      0x7fff,     0x8000,     0xffff,     0x7fffffff,  0x80000000,  0xffffffff,
    1ull << 32, 1ull << 40, 1ull << 46, (1ull << 46) + 1,       0x7fffffffffffffffull,
    0x8000000000000000ull,  ~0ull - 1,  ~0ull};


// Fields worth more attention: those that steer where open looks.
unsigned weight(FieldRole r) {
  switch (r) {
    case FieldRole::pid:
    case FieldRole::fd:
    case FieldRole::descriptor:
    case FieldRole::size:
    case FieldRole::offset:
    case FieldRole::token:
    case FieldRole::slot:
      return 4;
    case FieldRole::guard:
    case FieldRole::guard_kind:
    case FieldRole::kind:
    case FieldRole::version:
      return 2;
    default:
      return 1;
  }
}

bool fd_like(FieldRole r) { return r == FieldRole::fd || r == FieldRole::descriptor; }

}  // namespace

Mutator::Mutator(const MutatorContext& ctx) : ctx_(ctx), by_role_(static_cast<std::size_t>(FieldRole::opaque) + 1) {
  for (std::size_t i = 0; i < ctx_.values.size(); ++i) by_role_[static_cast<std::size_t>(ctx_.values[i].role)].push_back(i);
}

std::uint64_t Mutator::role_value(Rng& rng, FieldRole role, std::uint64_t fallback) const {
  const auto& own = by_role_[static_cast<std::size_t>(role)];
  const auto& other = by_role_[static_cast<std::size_t>(role == FieldRole::fd ? FieldRole::descriptor : FieldRole::fd)];
  const std::size_t n = own.size() + (fd_like(role) ? other.size() : 0);
  if (n == 0) return fallback;
  const std::size_t pick = rng.below(n);
  return ctx_.values[pick < own.size() ? own[pick] : other[pick - own.size()]].value;
}

std::uint64_t Mutator::boundary(Rng& rng, const LayoutField& f, const Input& in) const {
  const HandleLayout& l = *ctx_.layout;
  const std::uint64_t page = ctx_.page_size;
  auto field_value = [&](FieldRole r, std::uint64_t fallback) {
    const int i = l.find(r);
    return i < 0 ? fallback : l.get(in.bytes, i);
  };
  std::uint64_t special[12];
  std::size_t n = 0;
  switch (f.role) {
    case FieldRole::size: {
      const std::uint64_t s = field_value(FieldRole::size, page), o = field_value(FieldRole::offset, 0);
      for (std::uint64_t v : std::initializer_list<std::uint64_t>{s + 1, s - 1, s + 8, s + page, s - page, 2 * s, 0 - o, 0 - o + 1, page - 1, page + 1})
        special[n++] = v;
      break;
    }
    case FieldRole::offset: {
      const std::uint64_t s = field_value(FieldRole::size, page), o = field_value(FieldRole::offset, 0);
      for (std::uint64_t v : std::initializer_list<std::uint64_t>{s, s - 1, o + 1, o + 8, o + page, o - 1, page, page - 1, 0 - s, 0 - page}) special[n++] = v;
      break;
    }
    case FieldRole::pid:
      for (std::uint64_t v : std::initializer_list<std::uint64_t>{0ull, 1ull, 4194304ull, 4194305ull, 0x7fffffffull, 0xffffffffull}) special[n++] = v;
      break;
    case FieldRole::fd:
    case FieldRole::descriptor:
      for (std::uint64_t v : std::initializer_list<std::uint64_t>{0xffffffffull, 0x7fffffffull, 0ull, 1ull, 2ull, 3ull, 1023ull, 1024ull, 65535ull}) special[n++] = v;
      break;
    case FieldRole::slot: {
      const std::uint64_t slots = (page - 64) / 32;  // ipcref: export slots in a control page
      for (std::uint64_t v : std::initializer_list<std::uint64_t>{slots - 1, slots, slots + 1, 0ull, 1ull, 0xffffffffull}) special[n++] = v;
      break;
    }
    case FieldRole::version:
    case FieldRole::kind:
    case FieldRole::guard_kind:
    case FieldRole::type:
    case FieldRole::device:
      for (std::uint64_t v : std::initializer_list<std::uint64_t>{0ull, 1ull, 2ull, 3ull, 4ull, 0xffull, 0xffffull}) special[n++] = v;
      break;
    case FieldRole::magic: {
      const std::uint64_t m = l.get(in.bytes, l.find(FieldRole::magic));
      for (std::uint64_t v : std::initializer_list<std::uint64_t>{0ull, m ^ 0x20, __builtin_bswap32(static_cast<std::uint32_t>(m)) + 0ull, m + 1}) special[n++] = v;
      break;
    }
    default:
      break;
  }
  if (n > 0 && rng.chance(1, 2)) return special[rng.below(n)];
  return kGeneric[rng.below(std::size(kGeneric))];
}

void Mutator::field_op(Rng& rng, Input& in, int field, bool& touched_checksum) const {
  const HandleLayout& l = *ctx_.layout;
  const LayoutField& f = l.fields[static_cast<std::size_t>(field)];
  const std::uint64_t cur = l.get(in.bytes, field);
  std::uint64_t v = cur;
  switch (rng.below(6)) {
    case 0:
      v = boundary(rng, f, in);
      break;
    case 1: {  // the same field of another real export
      const Input& other = ctx_.bases[rng.below(ctx_.bases.size())];
      v = l.get(other.bytes, field);
      break;
    }
    case 2:  // a live value of the same role: another process's pid, another allocation's fd
      v = role_value(rng, f.role, cur);
      if (fd_like(f.role) && rng.chance(1, 2)) v += static_cast<std::uint64_t>(static_cast<std::int64_t>(rng.below(5)) - 2);
      break;
    case 3: {  // small arithmetic (pages for sizes and offsets)
      const std::uint64_t unit = (f.role == FieldRole::size || f.role == FieldRole::offset) && rng.chance(1, 2) ? ctx_.page_size : 1;
      const std::uint64_t d = (1 + rng.below(16)) * unit;
      v = rng.chance(1, 2) ? cur + d : cur - d;
      break;
    }
    case 4:
      v = cur ^ (1ull << rng.below(8 * f.width));
      break;
    default:
      if (f.role == FieldRole::pid || f.role == FieldRole::guard || f.role == FieldRole::guard_kind) {
        // A coherent identity: pid, guard kind and guard of another exporter (or of this process).
        const Input& other = ctx_.bases[rng.below(ctx_.bases.size())];
        for (FieldRole r : {FieldRole::pid, FieldRole::guard_kind, FieldRole::guard})
          if (const int i = l.find(r); i >= 0) l.set(in.bytes, i, l.get(other.bytes, i));
        if (rng.chance(1, 3)) l.set(in.bytes, l.find(FieldRole::pid), role_value(rng, FieldRole::pid, cur));
        return;
      }
      v = role_value(rng, f.role, boundary(rng, f, in));
      break;
  }
  l.set(in.bytes, field, v & width_mask(f.width));
  if (f.role == FieldRole::checksum) touched_checksum = true;
}

void Mutator::blind_op(Rng& rng, Input& in) const {
  const std::size_t len = in.length;
  const Input& other = ctx_.bases[rng.below(ctx_.bases.size())];
  switch (len == 0 ? 4 : rng.below(7)) {
    case 0:  // bit flip
      in.bytes[rng.below(len)] ^= static_cast<std::byte>(1u << rng.below(8));
      break;
    case 1: {  // interesting byte
      static constexpr std::uint8_t kBytes[] = {0x00, 0xff, 0x7f, 0x80, 0x01, 0xfe};
      in.bytes[rng.below(len)] =
          static_cast<std::byte>(rng.chance(1, 4) ? rng.next() & 0xff : kBytes[rng.below(std::size(kBytes))]);
      break;
    }
    case 2: {  // random run
      const std::size_t at = rng.below(len), n = std::min<std::size_t>(1 + rng.below(8), len - at);
      for (std::size_t i = 0; i < n; ++i) in.bytes[at + i] = static_cast<std::byte>(rng.next() & 0xff);
      break;
    }
    case 3:  // truncation (to any shorter length, including none)
      in.length = static_cast<std::uint16_t>(rng.below(len));
      break;
    case 4: {  // extension with zeros, random bytes or a repeat of the head
      const std::size_t add = std::min<std::size_t>(1 + rng.below(64), kMaxInput - len);
      const unsigned how = static_cast<unsigned>(rng.below(3));
      for (std::size_t i = 0; i < add; ++i)
        in.bytes[len + i] = how == 0 ? std::byte{0} : how == 1 ? static_cast<std::byte>(rng.next() & 0xff) : in.bytes[i % std::max<std::size_t>(len, 1)];
      in.length = static_cast<std::uint16_t>(len + add);
      break;
    }
    case 5: {  // splice: a run of another export at the same place
      const std::size_t at = rng.below(len), n = std::min<std::size_t>(1 + rng.below(16), len - at);
      std::memcpy(in.bytes.data() + at, other.bytes.data() + at, n);
      break;
    }
    default: {  // splice from elsewhere in another export
      const std::size_t from = rng.below(std::max<std::size_t>(other.length, 1)), at = rng.below(len);
      const std::size_t n = std::min<std::size_t>({1 + rng.below(16), len - at, kMaxInput - from});
      std::memmove(in.bytes.data() + at, other.bytes.data() + from, n);
      break;
    }
  }
}

MutationInfo Mutator::mutate(Rng& rng, const Input& start, Input& out) const {
  out = start;
  MutationInfo info;
  if (ctx_.map_granularity) map_op(rng, out);
  if (rng.below(64) == 0) return info;  // now and then the real thing: the oracle's success path
  const HandleLayout& l = *ctx_.layout;
  info.field_aware = l.knowledge != "opaque" && rng.chance(7, 10);
  info.ops = 1 + (rng.chance(1, 2) ? 0 : rng.chance(3, 5) ? 1 : 2);
  bool touched_checksum = false;
  unsigned total_weight = 0;
  for (const auto& f : l.fields) total_weight += weight(f.role);
  for (int i = 0; i < info.ops; ++i) {
    if (ctx_.descriptors && rng.chance(1, 10)) {
      // Another export's descriptor, a descriptor no export sent, or none at all.
      const std::uint64_t pick = rng.below(ctx_.bases.size() + 2);
      out.descriptor = pick < ctx_.bases.size() ? static_cast<std::int16_t>(pick)
                                                : static_cast<std::int16_t>(pick == ctx_.bases.size() ? kNoDescriptor : kForeignDescriptor);
      continue;
    }
    if (!info.field_aware) {
      blind_op(rng, out);
      continue;
    }
    unsigned w = static_cast<unsigned>(rng.below(total_weight));
    int field = 0;
    for (std::size_t k = 0; k < l.fields.size(); ++k) {
      const unsigned fw = weight(l.fields[k].role);
      if (w < fw) {
        field = static_cast<int>(k);
        break;
      }
      w -= fw;
    }
    field_op(rng, out, field, touched_checksum);
  }
  if (l.has_checksum() && !touched_checksum && rng.chance(info.field_aware ? 85 : 40, 100)) {
    l.reseal(out.bytes);
    info.resealed = true;
  }
  return info;
}

void Mutator::map_op(Rng& rng, Input& in) const {
  const std::uint64_t g = ctx_.map_granularity;
  const std::uint64_t s = in.base < ctx_.map_sizes.size() && ctx_.map_sizes[in.base] ? ctx_.map_sizes[in.base] : g;
  if (rng.chance(1, 4)) {  // the whole object
    in.map_offset = 0;
    in.map_size = s;
    return;
  }
  const std::uint64_t offsets[] = {0, g, s >= g ? s - g : 0, s, g * rng.below(s / g + 1), 8, s + g};
  in.map_offset = offsets[rng.below(std::size(offsets))];
  const std::uint64_t rest = s > in.map_offset ? s - in.map_offset : g;
  const std::uint64_t sizes[] = {rest, g, s, rest + g, g + 8, g * (1 + rng.below(s / g))};
  in.map_size = sizes[rng.below(std::size(sizes))];
}

std::uint64_t changed_fields(const MutatorContext& ctx, const Input& in) {
  const HandleLayout& l = *ctx.layout;
  const Input& base = ctx.bases[in.base < ctx.bases.size() ? in.base : 0];
  std::uint64_t mask = 0;
  for (std::size_t f = 0; f < l.fields.size(); ++f)
    if (l.get(in.bytes, static_cast<int>(f)) != l.get(base.bytes, static_cast<int>(f))) mask |= 1ull << std::min<std::size_t>(f, 61);
  if (in.length < l.size) mask |= kLengthShorter;
  if (in.length > l.size) mask |= kLengthLonger;
  return mask;
}

std::string changed_fields_name(const HandleLayout& l, std::uint64_t mask) {
  std::string out;
  auto add = [&](const std::string& n) { out += (out.empty() ? "" : "+") + n; };
  for (std::size_t f = 0; f < l.fields.size() && f < 62; ++f)
    if (mask & (1ull << f)) add(l.fields[f].name);
  if (mask & kLengthShorter) add("length");
  if (mask & kLengthLonger) add("tail");
  return out;
}

std::uint64_t changed_fields_mask(const HandleLayout& l, const std::string& name) {
  std::uint64_t mask = 0;
  std::size_t at = 0;
  while (at <= name.size()) {
    const std::size_t end = std::min(name.find('+', at), name.size());
    const std::string part = name.substr(at, end - at);
    if (part == "length") mask |= kLengthShorter;
    else if (part == "tail") mask |= kLengthLonger;
    else
      for (std::size_t f = 0; f < l.fields.size(); ++f)
        if (l.fields[f].name == part) mask |= 1ull << std::min<std::size_t>(f, 61);
    at = end + 1;
  }
  return mask;
}

}  // namespace ipcheck::fuzz
