#include "ipcheck/fuzz/symbolic.hpp"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <stdexcept>

namespace ipcheck::fuzz {
namespace {

bool compatible(FieldRole field, FieldRole value) {
  auto fdish = [](FieldRole r) { return r == FieldRole::fd || r == FieldRole::descriptor; };
  return field == value || (fdish(field) && fdish(value));
}

// The live value called `name`: "<base>.<field>" or a named value.
std::optional<std::uint64_t> lookup(const MutatorContext& ctx, const std::string& name) {
  for (const auto& v : ctx.values)
    if (v.name == name) return v.value;
  const auto dot = name.rfind('.');
  if (dot == std::string::npos) return std::nullopt;
  const int b = find_base(ctx, name.substr(0, dot));
  const int f = ctx.layout->find(name.substr(dot + 1));
  if (b < 0 || f < 0) return std::nullopt;
  return ctx.layout->get(ctx.bases[static_cast<std::size_t>(b)].bytes, f);
}

std::string owner_of(const std::string& name) { return name.substr(0, name.find('.')); }

// The best name for `value` in field `f` of input `in`: a live value of the field's role,
// else the same field of another export, else (for values too large to be chance) any
// live value; among equals, one of the process the input's pid names ("producer", "worker").
std::string source_for(const MutatorContext& ctx, const Input& in, int f, std::uint64_t value) {
  const HandleLayout& l = *ctx.layout;
  const LayoutField& field = l.fields[static_cast<std::size_t>(f)];
  const std::uint64_t m = width_mask(field.width);
  if (field.role == FieldRole::checksum) return {};
  std::string owner;
  if (const int p = l.find(FieldRole::pid); p >= 0)
    for (const auto& v : ctx.values)
      if (v.role == FieldRole::pid && v.value == l.get(in.bytes, p)) owner = owner_of(v.name);
  std::vector<std::string> tiers[3];
  for (const auto& v : ctx.values)
    if (compatible(field.role, v.role) && (v.value & m) == value) tiers[0].push_back(v.name);
  for (std::size_t b = 0; b < ctx.bases.size(); ++b)
    if (b != in.base && l.get(ctx.bases[b].bytes, f) == value) tiers[1].push_back(ctx.base_names[b] + "." + field.name);
  if (value >= 0x10000) {
    for (const auto& v : ctx.values)
      if ((v.value & m) == value) tiers[2].push_back(v.name);
    for (std::size_t b = 0; b < ctx.bases.size(); ++b)
      for (std::size_t g = 0; g < l.fields.size(); ++g)
        if (l.fields[g].width == field.width && l.get(ctx.bases[b].bytes, static_cast<int>(g)) == value)
          tiers[2].push_back(ctx.base_names[b] + "." + l.fields[g].name);
  }
  for (const auto& tier : tiers) {
    for (const auto& name : tier)
      if (!owner.empty() && owner_of(name) == owner) return name;
    if (!tier.empty()) return tier.front();
  }
  return {};
}

std::string descriptor_name(const MutatorContext& ctx, int d) {
  if (d == kNoDescriptor) return {};
  if (d == kForeignDescriptor) return "foreign";
  return ctx.base_names.at(static_cast<std::size_t>(d));
}

}  // namespace

std::string hexnum(std::uint64_t v) {
  char b[24];
  std::snprintf(b, sizeof b, "%#llx", static_cast<unsigned long long>(v));
  return b;
}

int find_base(const MutatorContext& ctx, const std::string& name) {
  for (std::size_t i = 0; i < ctx.base_names.size(); ++i)
    if (ctx.base_names[i] == name) return static_cast<int>(i);
  return -1;
}

int default_descriptor(const MutatorContext& ctx, std::size_t base) { return ctx.bases.at(base).descriptor; }

Symbolic symbolize(const MutatorContext& ctx, const Input& in) {
  const HandleLayout& l = *ctx.layout;
  const Input& base = ctx.bases.at(in.base);
  Symbolic s;
  s.base = ctx.base_names.at(in.base);
  s.length = in.length;
  s.descriptor = descriptor_name(ctx, in.descriptor);
  s.map_offset = in.map_offset;
  s.map_size = in.map_size;
  for (std::size_t i = l.size; i < in.length; ++i) s.tail.push_back(in.bytes[i]);
  const int sum = l.find(FieldRole::checksum);
  bool any = false;
  for (std::size_t f = 0; f < l.fields.size(); ++f) {
    if (static_cast<int>(f) == sum) continue;
    const std::uint64_t v = l.get(in.bytes, static_cast<int>(f));
    if (v == l.get(base.bytes, static_cast<int>(f))) continue;
    s.changes.push_back({l.fields[f].name, v, source_for(ctx, in, static_cast<int>(f), v)});
    any = true;
  }
  if (sum >= 0) {
    const std::uint64_t v = l.get(in.bytes, sum);
    if (any && l.checksum_valid(in.bytes)) {
      s.resealed = true;
    } else if (v != l.get(base.bytes, sum)) {
      s.changes.push_back({l.fields[static_cast<std::size_t>(sum)].name, v, {}});
    }
  }
  return s;
}

std::optional<Input> resolve(const MutatorContext& ctx, const Symbolic& s, std::string* why) {
  const HandleLayout& l = *ctx.layout;
  const int b = find_base(ctx, s.base);
  if (b < 0) {
    if (why) *why = "the reproducer derives from '" + s.base + "', which this campaign does not export";
    return std::nullopt;
  }
  Input in = ctx.bases[static_cast<std::size_t>(b)];
  in.base = static_cast<std::uint16_t>(b);
  for (const auto& c : s.changes) {
    const int f = l.find(c.field);
    if (f < 0) {
      if (why) *why = "the reproducer changes field '" + c.field + "', which layout " + l.name + " lacks";
      return std::nullopt;
    }
    std::uint64_t v = c.value;
    if (!c.source.empty()) {
      const auto live = lookup(ctx, c.source);
      if (!live) {
        if (why) *why = "the reproducer takes " + c.field + " from '" + c.source + "', which this campaign lacks";
        return std::nullopt;
      }
      v = *live & width_mask(l.fields[static_cast<std::size_t>(f)].width);
    }
    l.set(in.bytes, f, v);
  }
  if (s.resealed) l.reseal(in.bytes);
  if (s.length > kMaxInput || s.tail.size() + l.size > kMaxInput) {
    if (why) *why = "the reproducer is " + std::to_string(s.length) + " bytes; at most " + std::to_string(kMaxInput) + " are supported";
    return std::nullopt;
  }
  std::copy(s.tail.begin(), s.tail.end(), in.bytes.begin() + static_cast<std::ptrdiff_t>(l.size));
  in.length = static_cast<std::uint16_t>(s.length);
  in.map_offset = s.map_offset;
  in.map_size = s.map_size;
  if (s.descriptor.empty()) {
    in.descriptor = kNoDescriptor;
  } else if (s.descriptor == "foreign") {
    in.descriptor = kForeignDescriptor;
  } else {
    const int d = find_base(ctx, s.descriptor);
    if (d < 0) {
      if (why) *why = "the reproducer passes the descriptor of '" + s.descriptor + "', which this campaign lacks";
      return std::nullopt;
    }
    in.descriptor = static_cast<std::int16_t>(d);
  }
  return in;
}

std::string describe(const Symbolic& s, const HandleLayout& layout) {
  std::string out;
  auto add = [&](const std::string& part) { out += (out.empty() ? "" : "; ") + part; };
  for (const auto& c : s.changes)
    add(c.field + " := " + (c.source.empty() ? hexnum(c.value) : c.source + " (" + hexnum(c.value) + ")"));
  if (layout.has_checksum() && !s.changes.empty()) add(s.resealed ? "checksum resealed" : "checksum left stale");
  if (s.length < layout.size) add("truncated to " + std::to_string(s.length) + " bytes");
  if (s.length > layout.size) add("extended by " + std::to_string(s.length - layout.size) + " bytes");
  if (out.empty()) add("unchanged");
  add("from " + s.base);
  if (!s.descriptor.empty()) add("descriptor of " + s.descriptor);
  if (s.map_size || s.map_offset)
    add("mapped at offset " + std::to_string(s.map_offset) + ", " + std::to_string(s.map_size) + " bytes");
  return out;
}

std::vector<std::string> mutated_fields(const Symbolic& s, const MutatorContext& ctx) {
  std::vector<std::string> out;
  for (const auto& c : s.changes) out.push_back(c.field);
  if (s.length < ctx.layout->size) out.push_back("length");
  if (s.length > ctx.layout->size) out.push_back("tail");
  const int b = find_base(ctx, s.base);
  if (b >= 0 && descriptor_name(ctx, default_descriptor(ctx, static_cast<std::size_t>(b))) != s.descriptor)
    out.push_back("descriptor");
  std::sort(out.begin(), out.end());
  return out;
}

Symbolic restrict_to(const Symbolic& s, const std::vector<std::string>& keep, const MutatorContext& ctx) {
  auto kept = [&](const std::string& name) { return std::find(keep.begin(), keep.end(), name) != keep.end(); };
  Symbolic t = s;
  t.changes.clear();
  for (const auto& c : s.changes)
    if (kept(c.field)) t.changes.push_back(c);
  if (t.changes.empty()) t.resealed = false;
  if ((s.length < ctx.layout->size && !kept("length")) || (s.length > ctx.layout->size && !kept("tail"))) {
    t.length = ctx.layout->size;
    t.tail.clear();
  }
  const int b = find_base(ctx, s.base);
  if (b >= 0 && !kept("descriptor")) t.descriptor = descriptor_name(ctx, default_descriptor(ctx, static_cast<std::size_t>(b)));
  return t;
}

std::vector<Symbolic> simplifications(const Symbolic& s, const MutatorContext& ctx) {
  std::vector<Symbolic> out;
  for (std::size_t i = 0; i < s.changes.size(); ++i) {
    Symbolic t = s;
    t.changes.erase(t.changes.begin() + static_cast<std::ptrdiff_t>(i));
    if (t.changes.empty()) t.resealed = false;
    out.push_back(std::move(t));
  }
  if (s.length != ctx.layout->size) {
    Symbolic t = s;
    t.length = ctx.layout->size;
    t.tail.clear();
    out.push_back(std::move(t));
  }
  const int b = find_base(ctx, s.base);
  if (b >= 0) {
    const std::string d = descriptor_name(ctx, default_descriptor(ctx, static_cast<std::size_t>(b)));
    if (d != s.descriptor) {
      Symbolic t = s;
      t.descriptor = d;
      out.push_back(std::move(t));
    }
  }
  return out;
}

nlohmann::json to_json(const Symbolic& s) {
  nlohmann::json changes = nlohmann::json::array();
  for (const auto& c : s.changes) {
    nlohmann::json j = {{"field", c.field}, {"value", hexnum(c.value)}};
    if (!c.source.empty()) j["from"] = c.source;
    changes.push_back(j);
  }
  nlohmann::json j = {{"base", s.base},
                      {"changes", changes},
                      {"checksum", s.resealed ? "resealed" : "as_changed"},
                      {"length", s.length},
                      {"tail", to_hex(s.tail)},
                      {"descriptor", s.descriptor}};
  if (s.map_size || s.map_offset) j["map"] = {{"offset", s.map_offset}, {"size", s.map_size}};
  return j;
}

Symbolic symbolic_from_json(const nlohmann::json& j) {
  // A reproducer is input from anyone: every field is checked, and a wrong one is named.
  auto bad = [](const std::string& field, const std::string& why) {
    return std::invalid_argument("input." + field + " " + why);
  };
  auto text = [&](const nlohmann::json& o, const char* key, bool required) -> std::string {
    auto it = o.find(key);
    if (it == o.end() || it->is_null()) {
      if (required) throw bad(key, "is missing");
      return "";
    }
    if (!it->is_string()) throw bad(key, std::string("is ") + it->type_name() + ", not text");
    return it->get<std::string>();
  };
  if (!j.is_object()) throw std::invalid_argument(std::string("input is ") + j.type_name() + ", not an object");
  Symbolic s;
  s.base = text(j, "base", true);
  auto changes = j.find("changes");
  if (changes == j.end() || !changes->is_array()) throw bad("changes", "is not an array");
  if (changes->size() > kMaxSymbolicChanges)
    throw bad("changes", "has " + std::to_string(changes->size()) + " items, more than the " +
                             std::to_string(kMaxSymbolicChanges) + " a handle layout has fields");
  for (std::size_t i = 0; i < changes->size(); ++i) {
    const auto& c = (*changes)[i];
    const std::string at = "changes[" + std::to_string(i) + "]";
    if (!c.is_object()) throw bad(at, "is not an object");
    FieldChange fc;
    fc.field = text(c, "field", true);
    const std::string v = text(c, "value", true);
    const bool hex = v.size() > 2 && v[0] == '0' && (v[1] == 'x' || v[1] == 'X');
    const std::string digits = hex ? v.substr(2) : v;
    std::uint64_t value = 0;
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value, hex ? 16 : 10);
    if (digits.empty() || ec != std::errc() || end != digits.data() + digits.size())
      throw bad(at + ".value", "is '" + v + "', not a whole number from 0 to 2^64-1 (decimal or 0x hex)");
    fc.value = value;
    fc.source = text(c, "from", false);
    s.changes.push_back(fc);
  }
  s.resealed = j.contains("checksum") ? text(j, "checksum", false) == "resealed" : false;
  auto length = j.find("length");
  if (length == j.end() || !length->is_number_unsigned() || length->get<std::uint64_t>() > kMaxSymbolicLength)
    throw bad("length", (length == j.end() ? std::string("is missing") : "is " + length->dump()) +
                            ", not a byte count from 0 to " + std::to_string(kMaxSymbolicLength));
  s.length = static_cast<std::size_t>(length->get<std::uint64_t>());
  try {
    const std::string tail = text(j, "tail", false);
    if (tail.size() / 2 > kMaxSymbolicLength)
      throw std::invalid_argument("is " + std::to_string(tail.size() / 2) + " bytes, more than " +
                                  std::to_string(kMaxSymbolicLength));
    s.tail = from_hex(tail);
  } catch (const std::invalid_argument& e) {
    throw bad("tail", e.what());
  }
  s.descriptor = text(j, "descriptor", false);
  if (auto m = j.find("map"); m != j.end()) {
    if (!m->is_object()) throw bad("map", "is not an object {\"offset\": N, \"size\": N}");
    for (const char* k : {"offset", "size"}) {
      auto v = m->find(k);
      if (v == m->end() || !v->is_number_unsigned())
        throw bad(std::string("map.") + k, (v == m->end() ? std::string("is missing") : "is " + v->dump()) + ", not a byte count");
    }
    s.map_offset = m->at("offset").get<std::uint64_t>();
    s.map_size = m->at("size").get<std::uint64_t>();
  }
  return s;
}

std::string to_hex(std::span<const std::byte> bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (std::byte b : bytes) {
    out.push_back(digits[static_cast<unsigned>(b) >> 4]);
    out.push_back(digits[static_cast<unsigned>(b) & 15]);
  }
  return out;
}

std::vector<std::byte> from_hex(const std::string& hex) {
  auto nibble = [&](char c) -> unsigned {
    if (c >= '0' && c <= '9') return static_cast<unsigned>(c - '0');
    if (c >= 'a' && c <= 'f') return static_cast<unsigned>(c - 'a' + 10);
    if (c >= 'A' && c <= 'F') return static_cast<unsigned>(c - 'A' + 10);
    throw std::invalid_argument(std::string("hex text has a non-hex character '") + c + "'");
  };
  if (hex.size() % 2) throw std::invalid_argument("hex text has an odd number of digits (" + std::to_string(hex.size()) + ")");
  std::vector<std::byte> out;
  for (std::size_t i = 0; i < hex.size(); i += 2) out.push_back(static_cast<std::byte>(nibble(hex[i]) << 4 | nibble(hex[i + 1])));
  return out;
}

}  // namespace ipcheck::fuzz
