#include "ipcheck/fuzz/repro_file.hpp"

#include <algorithm>
#include <stdexcept>

namespace ipcheck::fuzz {
namespace {

using nlohmann::json;

std::invalid_argument field_error(const std::string& what) { return std::invalid_argument(what); }

// A text field: "" when absent or null; anything but a string is an error naming it.
std::string text_field(const json& doc, const char* key) {
  auto it = doc.find(key);
  if (it == doc.end() || it->is_null()) return {};
  if (!it->is_string()) throw field_error(std::string("field \"") + key + "\" is " + it->type_name() + ", not text");
  return it->get<std::string>();
}

}  // namespace

ReproFile reproducer_from_json(const json& doc) {
  if (!doc.is_object()) throw field_error(std::string("the document is ") + doc.type_name() + ", not an object");
  const std::string schema = text_field(doc, "schema");
  if (schema != kReproSchema)
    throw field_error("its schema is \"" + schema + "\", not \"" + kReproSchema + "\": it is no ipcheck reproducer");
  ReproFile r;
  r.setup = text_field(doc, "setup");
  r.adapter = text_field(doc, "adapter");
  r.target = text_field(doc, "target");
  if (r.target.empty()) r.target = "memory";
  if (r.target != "memory" && r.target != "physical" && r.target != "event")
    throw field_error("field \"target\" is '" + r.target + "', not memory, physical or event");
  r.transport = text_field(doc, "transport");
  if (!r.transport.empty() && r.transport != "pidfd" && r.transport != "scm" && r.transport != "auto")
    throw field_error("field \"transport\" is '" + r.transport + "', not pidfd, scm or auto");
  r.expect = text_field(doc, "expect");
  if (auto it = doc.find("adapter_options"); it != doc.end() && !it->is_null()) {
    if (!it->is_object()) throw field_error(std::string("field \"adapter_options\" is ") + it->type_name() + ", not an object");
    if (it->size() > 64)
      throw field_error("field \"adapter_options\" has " + std::to_string(it->size()) + " keys; no adapter takes more than 64");
    for (const auto& [k, v] : it->items()) {
      if (!v.is_string()) throw field_error("field \"adapter_options." + k + "\" is " + v.type_name() + ", not text");
      r.adapter_options.emplace(k, v.get<std::string>());
    }
  }
  auto input = doc.find("input");
  if (input == doc.end()) throw field_error("it has no \"input\"");
  r.input = symbolic_from_json(*input);
  return r;
}

std::map<std::string, std::string> trusted_adapter_options(const ReproFile& f, const std::string& adapter,
                                                           const std::vector<std::string>& accepted,
                                                           const std::vector<std::string>& path_options,
                                                           std::vector<std::string>& ignored) {
  auto in = [](const std::vector<std::string>& list, const std::string& k) {
    return std::find(list.begin(), list.end(), k) != list.end();
  };
  std::map<std::string, std::string> out;
  for (const auto& [k, v] : f.adapter_options) {
    if (!in(accepted, k))
      ignored.push_back(k + "=" + v + " (no option of adapter " + adapter + ")");
    else if (in(path_options, k))
      ignored.push_back(k + "=" + v + " (it names a library, a loader or a file, which only your command line " +
                        "chooses: give --adapter-opt " + k + "=... if you mean it)");
    else
      out.emplace(k, v);
  }
  return out;
}

std::optional<json> corpus_entry_input(const json& doc, const std::string& adapter, const std::string& target) {
  if (!doc.is_object()) throw field_error(std::string("the document is ") + doc.type_name() + ", not an object");
  auto is = [&](const char* key, const json& want, const json& fallback) {
    auto it = doc.find(key);
    return (it == doc.end() ? fallback : *it) == want;
  };
  if (!is("schema", kReproSchema, json()) || !is("adapter", adapter, json()) || !is("target", target, json("memory")))
    return std::nullopt;  // another adapter's or another target's
  auto input = doc.find("input");
  if (input == doc.end()) throw field_error("it has no \"input\"");
  (void)symbolic_from_json(*input);  // well-formed
  return *input;
}

}  // namespace ipcheck::fuzz
