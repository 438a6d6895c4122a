#include "ipcheck/resources.hpp"

#include <cstdlib>
#include <sstream>
#include <stdexcept>
#include <vector>

namespace ipcheck {

using nlohmann::json;

std::string device_mask_variable(const std::string& adapter) {
  if (adapter == "cuda") return "CUDA_VISIBLE_DEVICES";
  if (adapter == "ze") return "ZE_AFFINITY_MASK";
  return {};
}

namespace {

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string part;
  std::istringstream in(s);
  while (std::getline(in, part, sep)) out.push_back(part);
  return out;
}

}  // namespace

std::optional<json> ctest_gpu_environment(const std::string& adapter,
                                          const std::function<const char*(const char*)>& getenv_fn) {
  auto get = [&](const std::string& name) -> std::optional<std::string> {
    const char* v = getenv_fn ? getenv_fn(name.c_str()) : std::getenv(name.c_str());
    if (!v) return std::nullopt;
    return std::string(v);
  };
  const auto count = get("CTEST_RESOURCE_GROUP_COUNT");
  if (!count) return std::nullopt;  // ctest was given no --resource-spec-file
  const std::string var = device_mask_variable(adapter);
  if (var.empty())
    throw std::invalid_argument("--ctest-resources: adapter '" + adapter +
                                "' has no variable that limits its devices; it knows cuda (CUDA_VISIBLE_DEVICES) and ze "
                                "(ZE_AFFINITY_MASK)");
  int groups = 0;
  try {
    std::size_t used = 0;
    groups = std::stoi(*count, &used);
    if (used != count->size() || groups < 0) throw std::invalid_argument("");
  } catch (const std::exception&) {
    throw std::invalid_argument("CTEST_RESOURCE_GROUP_COUNT is '" + *count + "', not a whole number");
  }
  json gpus = json::array();
  for (int g = 0; g < groups; ++g) {
    const std::string name = "CTEST_RESOURCE_GROUP_" + std::to_string(g) + "_GPUS";
    const auto list = get(name);
    if (!list) continue;  // this group holds other resource types
    for (const auto& item : split(*list, ';')) {
      if (item.empty()) continue;
      // "id:<id>,slots:<n>"
      const auto comma = item.find(',');
      const std::string id_part = item.substr(0, comma);
      const std::string slots_part = comma == std::string::npos ? "" : item.substr(comma + 1);
      if (id_part.rfind("id:", 0) != 0 || id_part.size() == 3 || slots_part.rfind("slots:", 0) != 0)
        throw std::invalid_argument(name + " is '" + *list + "'; CTest writes id:<id>,slots:<n> pairs separated by ';'");
      int slots = 0;
      try {
        slots = std::stoi(slots_part.substr(6));
      } catch (const std::exception&) {
        throw std::invalid_argument(name + " is '" + *list + "': slots is not a number");
      }
      gpus.push_back({{"id", id_part.substr(3)}, {"slots", slots}});
    }
  }
  if (gpus.empty())
    throw std::invalid_argument("CTest's resource allocation is active (CTEST_RESOURCE_GROUP_COUNT=" + *count +
                                ") but gave this test no GPU (no CTEST_RESOURCE_GROUP_<n>_GPUS); give the test "
                                "RESOURCE_GROUPS \"gpus:1\", or run ctest without --resource-spec-file");
  // Ids are the runtime's indices in ipcheck's own view: through the mask already set, if any.
  const auto outer = get(var);
  const std::vector<std::string> visible = outer && !outer->empty() ? split(*outer, ',') : std::vector<std::string>{};
  std::string value;
  for (const auto& g : gpus) {
    std::string id = g["id"].get<std::string>();
    if (!visible.empty()) {
      std::size_t used = 0;
      std::size_t n = 0;
      try {
        n = std::stoul(id, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used != id.size() || n >= visible.size())
        throw std::invalid_argument("CTest gave GPU id '" + id + "', which is not an index into " + var + "='" + *outer +
                                    "'; write the spec with 'ipcheck info --resource-spec' under the same " + var);
      id = visible[n];
    }
    value += (value.empty() ? "" : ",") + id;
  }
  return json{{"groups", groups}, {"gpus", gpus}, {"env", {{var, value}}}};
}

std::string pinned_device_mask(const std::string& adapter, int index, const std::vector<std::string>& env,
                               const std::function<const char*(const char*)>& getenv_fn) {
  const std::string var = device_mask_variable(adapter);
  if (var.empty() || index < 0) return {};
  std::optional<std::string> outer;
  for (const auto& e : env)
    if (e.rfind(var + "=", 0) == 0) outer = e.substr(var.size() + 1);
  if (!outer) {
    const char* v = getenv_fn ? getenv_fn(var.c_str()) : std::getenv(var.c_str());
    if (v) outer = v;
  }
  if (!outer || outer->empty()) return var + "=" + std::to_string(index);
  const auto visible = split(*outer, ',');
  if (static_cast<std::size_t>(index) >= visible.size()) return {};
  return var + "=" + visible[static_cast<std::size_t>(index)];
}

json resource_spec(const json& devices, int slots) {
  json gpus = json::array();
  for (std::size_t i = 0; i < devices.size(); ++i) gpus.push_back({{"id", std::to_string(i)}, {"slots", slots}});
  return {{"version", {{"major", 1}, {"minor", 0}}}, {"local", json::array({{{"gpus", gpus}}})}};
}

}  // namespace ipcheck
