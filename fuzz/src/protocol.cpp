#include "protocol.hpp"

#include <stdexcept>

#include "ipcheck/fuzz/symbolic.hpp"

namespace ipcheck::fuzz::detail {

using nlohmann::json;

namespace {
FieldRole parse_role(const std::string& s) {
  for (int r = 0; r <= static_cast<int>(FieldRole::opaque); ++r)
    if (s == role_name(static_cast<FieldRole>(r))) return static_cast<FieldRole>(r);
  throw std::invalid_argument("unknown field role '" + s + "'");
}
}  // namespace

json context_to_json(const MutatorContext& ctx) {
  json bases = json::array();
  for (std::size_t i = 0; i < ctx.bases.size(); ++i)
    bases.push_back({{"name", ctx.base_names[i]},
                     {"hex", to_hex(ctx.bases[i].data())},
                     {"descriptor", ctx.bases[i].descriptor}});
  json values = json::array();
  for (const auto& v : ctx.values) values.push_back(value_to_json(v));
  return {{"layout", ctx.layout->name}, {"layout_size", ctx.layout->size}, {"descriptors", ctx.descriptors},
          {"page_size", ctx.page_size}, {"bases", bases}, {"values", values}};
}

MutatorContext context_from_json(const json& j) {
  MutatorContext ctx;
  ctx.layout = &layout_for(j.at("layout").get<std::string>(), j.at("layout_size").get<std::size_t>());
  ctx.descriptors = j.at("descriptors").get<bool>();
  ctx.page_size = j.at("page_size").get<std::uint64_t>();
  for (const auto& b : j.at("bases")) {
    Input in;
    const auto bytes = from_hex(b.at("hex").get<std::string>());
    if (bytes.size() > kMaxInput) throw std::invalid_argument("a base export is over " + std::to_string(kMaxInput) + " bytes");
    std::copy(bytes.begin(), bytes.end(), in.bytes.begin());
    in.length = static_cast<std::uint16_t>(bytes.size());
    in.base = static_cast<std::uint16_t>(ctx.bases.size());
    in.descriptor = static_cast<std::int16_t>(b.at("descriptor").get<int>());
    ctx.bases.push_back(in);
    ctx.base_names.push_back(b.at("name").get<std::string>());
  }
  for (const auto& v : j.at("values")) ctx.values.push_back(value_from_json(v));
  return ctx;
}

json value_to_json(const NamedValue& v) { return {{"name", v.name}, {"role", role_name(v.role)}, {"value", hexnum(v.value)}}; }

NamedValue value_from_json(const json& j) {
  return {j.at("name").get<std::string>(), parse_role(j.at("role").get<std::string>()),
          std::stoull(j.at("value").get<std::string>(), nullptr, 0)};
}

json input_to_json(const MutatorContext& ctx, const Input& in) {
  json j = {{"hex", to_hex(std::span<const std::byte>(in.bytes.data(), kMaxInput))},
            {"length", in.length},
            {"base", ctx.base_names.at(in.base)},
            {"descriptor", in.descriptor}};
  if (in.map_size || in.map_offset) j["map"] = {{"offset", in.map_offset}, {"size", in.map_size}};
  return j;
}

Input input_from_json(const MutatorContext& ctx, const json& j) {
  Input in;
  const auto bytes = from_hex(j.at("hex").get<std::string>());
  std::copy_n(bytes.begin(), std::min(bytes.size(), kMaxInput), in.bytes.begin());
  in.length = j.at("length").get<std::uint16_t>();
  const int b = find_base(ctx, j.at("base").get<std::string>());
  if (b < 0) throw std::invalid_argument("input derives from unknown base '" + j.at("base").get<std::string>() + "'");
  in.base = static_cast<std::uint16_t>(b);
  in.descriptor = j.at("descriptor").get<std::int16_t>();
  if (auto m = j.find("map"); m != j.end()) {
    in.map_offset = m->at("offset").get<std::uint64_t>();
    in.map_size = m->at("size").get<std::uint64_t>();
  }
  return in;
}

json table_to_json(const std::vector<CanaryAlloc>& table) {
  json out = json::array();
  auto ranges = [](const std::vector<Range>& rs) {
    json a = json::array();
    for (const auto& r : rs) a.push_back({{"offset", r.offset}, {"size", r.size}});
    return a;
  };
  for (const auto& a : table)
    out.push_back({{"name", a.name}, {"salt", hexnum(a.salt)}, {"size", a.size}, {"decoy", a.decoy},
                   {"live", ranges(a.live)}, {"revoked", ranges(a.revoked)}});
  return out;
}

std::vector<CanaryAlloc> table_from_json(const json& j) {
  std::vector<CanaryAlloc> out;
  auto ranges = [](const json& a) {
    std::vector<Range> rs;
    for (const auto& r : a) rs.push_back({r.at("offset").get<std::uint64_t>(), r.at("size").get<std::uint64_t>()});
    return rs;
  };
  for (const auto& a : j) {
    CanaryAlloc c;
    c.name = a.at("name").get<std::string>();
    c.salt = std::stoull(a.at("salt").get<std::string>(), nullptr, 0);
    c.size = a.at("size").get<std::uint64_t>();
    c.decoy = a.at("decoy").get<bool>();
    c.live = ranges(a.at("live"));
    c.revoked = ranges(a.at("revoked"));
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace ipcheck::fuzz::detail
