// `ipcheck fuzz --export-c`, the finding read: a reproducer (ipcheck.fuzz-repro/1, with its
// description beside it), a finding's description (ipcheck.fuzz-finding/1), or a finding of a
// campaign's results.json by id (its reproducer when it was kept, else its mutation in words);
// and the checks that refuse a finding no C program reproduces. Every file is input from
// anyone. export_c.cpp writes the program.
#include "export_c_finding.hpp"

#include <filesystem>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "ipcheck/fuzz/oracle.hpp"
#include "ipcheck/reports/files.hpp"
#include "protocol.hpp"

namespace ipcheck::fuzz::export_c_detail {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Every file read here is input from anyone: a regular file of bounded size, its JSON
// depth bounded (reports::read_json_file), errors naming it.
json read_json_file(const std::string& path) {
  try {
    return reports::read_json_file(path, "finding file", reports::kMaxResultsBytes);
  } catch (const reports::FileError& e) {
    throw std::invalid_argument(e.what());
  }
}

// The inverse of describe() (symbolic.hpp) for what a fuzz section's "mutation" holds, so
// that a results.json whose reproducer files were not kept (a committed baseline) still
// exports. Tail bytes are not in the text: an extended input needs its .repro.
Symbolic parse_mutation(const std::string& text, const HandleLayout& layout) {
  Symbolic s;
  s.length = layout.size;
  std::size_t at = 0;
  while (at <= text.size()) {
    std::size_t end = text.find("; ", at);
    if (end == std::string::npos) end = text.size();
    const std::string part = text.substr(at, end - at);
    at = end + 2;
    if (part.empty() || part == "unchanged" || part == "checksum left stale") continue;
    if (part.rfind("from ", 0) == 0) {
      s.base = part.substr(5);
    } else if (part.rfind("descriptor of ", 0) == 0) {
      s.descriptor = part.substr(14);
    } else if (part == "checksum resealed") {
      s.resealed = true;
    } else if (part.rfind("truncated to ", 0) == 0) {
      s.length = std::stoul(part.substr(13));
    } else if (part.rfind("extended by ", 0) == 0) {
      throw std::invalid_argument("the mutation '" + text + "' extends the handle; the bytes added are only in the "
                                  "finding's .repro file: export that file");
    } else if (const auto eq = part.find(" := "); eq != std::string::npos) {
      FieldChange c;
      c.field = part.substr(0, eq);
      std::string v = part.substr(eq + 4);
      if (const auto paren = v.find(" ("); paren != std::string::npos && v.back() == ')') {
        c.source = v.substr(0, paren);
        v = v.substr(paren + 2, v.size() - paren - 3);
      }
      try {
        c.value = std::stoull(v, nullptr, 0);
      } catch (const std::exception&) {
        throw std::invalid_argument("the mutation '" + text + "' has a value ipcheck cannot read: '" + v + "'");
      }
      s.changes.push_back(c);
    } else {
      throw std::invalid_argument("the mutation '" + text + "' has a part ipcheck cannot read: '" + part + "'");
    }
  }
  if (s.base.empty()) throw std::invalid_argument("the mutation '" + text + "' names no export it came from");
  return s;
}

// A document's "adapter_options" ({"l0": "v2"}), strings only.
std::map<std::string, std::string> options_of(const json& doc) {
  std::map<std::string, std::string> out;
  if (auto it = doc.find("adapter_options"); it != doc.end() && it->is_object())
    for (const auto& [k, v] : it->items())
      if (v.is_string()) out[k] = v.get<std::string>();
  return out;
}

Finding from_repro(const json& doc, const std::string& path) {
  Finding f;
  f.from = path;
  f.id = fs::path(path).stem().string();
  f.adapter = doc.value("adapter", "");
  f.driver = doc.value("driver", "");
  f.layout = doc.value("handle_layout", "");
  f.target = doc.value("target", "memory");
  f.outcome = doc.value("expect", "");
  f.adapter_options = options_of(doc);
  if (doc.value("setup", "") != detail::kSetup)
    throw std::invalid_argument("'" + path + "' was made with set-up \"" + doc.value("setup", "") + "\"; this ipcheck writes \"" +
                                detail::kSetup + "\": export it with the ipcheck that found it");
  f.input = symbolic_from_json(doc.at("input"));
  f.has_input = true;
  // The finding's description beside it says what the campaign saw.
  const fs::path described = fs::path(path).replace_extension(".json");
  std::error_code ec;  // a name too long to look up is not there
  if (fs::exists(described, ec)) {
    try {
      const json d = read_json_file(described.string());
      f.id = d.value("id", f.id);
      f.detail = d.value("detail", "");
      if (f.outcome.empty()) f.outcome = d.value("outcome", "");
    } catch (const std::invalid_argument&) {
    }
  }
  return f;
}

Finding from_description(const json& d, const std::string& path) {
  Finding f;
  f.from = path;
  f.id = d.value("id", fs::path(path).stem().string());
  f.outcome = d.value("outcome", "");
  f.detail = d.value("detail", "");
  f.adapter = d.value("adapter", "");
  f.target = d.value("target", "memory");
  f.driver = d.contains("driver") && d["driver"].is_object() ? d["driver"].value("version", "") : "";
  f.layout = d.value("handle_layout", "");
  if (d.contains("input") && d["input"].is_object()) {
    f.input = symbolic_from_json(d["input"]);
    f.has_input = true;
  }
  return f;
}

Finding from_file(const std::string& path) {
  const json doc = read_json_file(path);
  const std::string schema = doc.value("schema", "");
  if (schema == "ipcheck.fuzz-repro/1") return from_repro(doc, path);
  if (schema == "ipcheck.fuzz-finding/1") return from_description(doc, path);
  throw std::invalid_argument("'" + path + "' is neither a reproducer (ipcheck.fuzz-repro/1) nor a finding "
                              "(ipcheck.fuzz-finding/1): its schema is \"" + schema + "\"");
}

Finding from_results(const std::string& id, const std::string& results) {
  const json doc = read_json_file(results);
  if (!doc.contains("fuzz") || !doc["fuzz"].is_object() || !doc["fuzz"].contains("findings"))
    throw std::invalid_argument("'" + results + "' has no fuzz section; give the results.json of a campaign "
                                "(ipcheck fuzz --out DIR, or a run with --results)");
  const json& fz = doc["fuzz"];
  std::string ids;
  for (const auto& x : fz["findings"]) {
    ids += (ids.empty() ? "" : ", ") + x.value("id", std::string());
    if (x.value("id", "") != id) continue;
    // The reproducer beside the results, when it was kept, is exact (tail bytes included). A
    // results file chooses no file to read: a reproducer that is there is read only when it is
    // a *.repro inside the results' folder, its links resolved (reports::reproducer_path); one
    // that is not there (a committed campaign's, whose findings were not kept) is not read.
    if (x.contains("reproducer") && x["reproducer"].is_string()) {
      const std::string named = x["reproducer"].get<std::string>();
      std::error_code ec;
      if (fs::exists(fs::path(results).parent_path() / named, ec)) {
        std::string repro;
        try {
          repro = reports::reproducer_path(results, id, named);
        } catch (const reports::FileError& e) {
          throw std::invalid_argument(e.what());
        }
        Finding f = from_file(repro);
        f.id = id;
        f.outcome = x.value("outcome", f.outcome);
        f.detail = x.value("detail", f.detail);
        return f;
      }
    }
    Finding f;
    f.from = results + " (fuzz finding " + id + ")";
    f.id = id;
    f.outcome = x.value("outcome", "");
    f.detail = x.value("detail", "");
    f.adapter = fz.value("adapter", "");
    f.driver = fz.contains("driver") ? fz["driver"].value("version", "") : "";
    f.layout = fz.contains("handle_layout") ? fz["handle_layout"].value("name", "") : "";
    if (doc.contains("run") && doc["run"].is_object() && doc["run"].contains("options") && doc["run"]["options"].is_object())
      f.adapter_options = options_of(doc["run"]["options"]);
    // The section's title names the target: "memory handles (cuda)", "event handles (cuda)".
    const std::string title = fz.value("target", "memory handles");
    f.target = title.rfind("physical", 0) == 0 ? "physical" : title.rfind("event", 0) == 0 ? "event" : "memory";
    const std::string mutation = x.value("mutation", "");
    if (!mutation.empty()) {
      f.input = parse_mutation(mutation, layout_for(f.layout, 64));
      f.has_input = true;
    }
    return f;
  }
  throw std::invalid_argument("'" + results + "' has no fuzz finding '" + id + "'; its findings: " +
                              (ids.empty() ? std::string("none") : ids));
}

// Where --export-c finds the finding: a file, an id of --results, or the id's reproducer in
// the campaign's folder.
Finding find_finding_file(const ExportCOptions& o) {
  std::error_code ec;  // an id too long for a file name is an id, not an error
  if (fs::is_regular_file(o.finding, ec)) return from_file(o.finding);
  if (!o.results.empty()) return from_results(o.finding, o.results);
  const fs::path repro = fs::path(o.campaign_dir) / "findings" / (o.finding + ".repro");
  if (!fs::exists(repro, ec))
    throw std::invalid_argument("'" + o.finding + "' is no file, and " + repro.string() +
                                " is not there; give a reproducer (findings/<id>.repro), or the finding's id with "
                                "--results RESULTS.json (the campaign's results) or --out DIR (the campaign's folder)");
  return from_file(repro.string());
}

}  // namespace

// A field of the wrong type or a missing one (nlohmann's type_error, out_of_range) is the
// file's fault: a usage error naming what was read, never an internal error.
Finding find_export_finding(const ExportCOptions& o) {
  try {
    return find_finding_file(o);
  } catch (const json::exception& e) {
    throw std::invalid_argument("the finding '" + o.finding + "'" + (o.results.empty() ? "" : " of '" + o.results + "'") +
                                " has a field of the wrong type, or lacks one ipcheck needs (" + e.what() +
                                "); export a finding file ipcheck wrote");
  }
}

// Refuses, with the reason, a finding no C program reproduces: another adapter's or
// target's, one without an input, or one whose outcome is no finding kind.
void check_exportable(const Finding& f) {
  if (f.adapter != "cuda" && f.adapter != "ur")
    throw std::invalid_argument("finding '" + f.id + "' is from adapter '" + f.adapter +
                                "': --export-c supports cuda findings (CUDA memory handles, cuIpcOpenMemHandle; event "
                                "handles, cuIpcOpenEventHandle) and ur findings (Unified Runtime memory handles, "
                                "urIPCOpenMemHandleExp); rerun a finding of another adapter with 'ipcheck fuzz --replay'");
  if (f.adapter == "ur" && f.target != "memory")
    throw std::invalid_argument("finding '" + f.id + "' is from a --target " + f.target +
                                " campaign on ur: --export-c writes Unified Runtime programs for memory-handle findings; "
                                "rerun it with 'ipcheck fuzz --replay'");
  if (f.target != "memory" && f.target != "event")
    throw std::invalid_argument("finding '" + f.id + "' is from a --target " + f.target +
                                " campaign: --export-c writes programs for memory- and event-handle findings; rerun it "
                                "with 'ipcheck fuzz --replay'");
  if (!f.has_input)
    throw std::invalid_argument("finding '" + f.id + "' has no input (" +
                                (f.detail.empty() ? std::string("seen at the end of a worker, not in an open") : f.detail) +
                                "): there is no open to write a program for");
  const auto expected = parse_verdict(f.outcome);
  if (!expected || !is_finding(*expected))
    throw std::invalid_argument("finding '" + f.id + "' records outcome '" + f.outcome + "', not a finding kind");
}

// Refuses an input no CUDA handle can be: another length, a resealed checksum.
void check_cuda_input(const Finding& f, const HandleLayout& layout, bool events) {
  const Symbolic& s = f.input;
  if (layout.size != 64 || s.length != 64 || !s.tail.empty())
    throw std::invalid_argument("finding '" + f.id + "' opens " + std::to_string(s.length) +
                                " bytes; a " + (events ? "CUipcEventHandle" : "CUipcMemHandle") +
                                " is 64 (the cuda adapter refuses other lengths itself)");
  if (s.resealed && layout.has_checksum())
    throw std::invalid_argument("finding '" + f.id + "' uses layout " + f.layout + ", which has a checksum; no CUDA handle has one");
}

// Refuses an input no program can rebuild: another length than the layout's, bytes past it,
// a descriptor passed beside the bytes (UR's handles are bytes only).
void check_ur_input(const Finding& f, const HandleLayout& layout) {
  const Symbolic& s = f.input;
  if (s.length != layout.size || !s.tail.empty())
    throw std::invalid_argument("finding '" + f.id + "' opens " + std::to_string(s.length + s.tail.size()) +
                                " bytes; its layout " + layout.name + " has " + std::to_string(layout.size) +
                                " (a Unified Runtime program opens handles of the runtime's own length)");
  if (!s.descriptor.empty())
    throw std::invalid_argument("finding '" + f.id + "' passes the descriptor of " + s.descriptor +
                                " beside the bytes; UR's handles are bytes only");
  if (s.resealed && layout.has_checksum())
    throw std::invalid_argument("finding '" + f.id + "' reseals a checksum; UMF's handles have none");
}

}  // namespace ipcheck::fuzz::export_c_detail
