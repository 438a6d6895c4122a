// Findings after the campaign: reports grouped by kind and changed fields, replayed,
// minimised, merged, and written as findings/<id>.json and .repro; the corpus folder.
#include <cctype>

#include "campaign_impl.hpp"
#include "ipcheck/reports/render.hpp"

namespace ipcheck::fuzz::campaign_detail {

namespace {

std::string safe_id(std::string s) {
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '+') c = '_';
  return s;
}

void write_json(const fs::path& p, const json& j) { reports::write_file_atomic(p.string(), j.dump(2) + '\n'); }

json repro_doc(const CampaignOptions& o, const json& setup, const MutatorContext& ctx, const Symbolic& s,
               const Input& tried, const std::string& expect) {
  json j = {{"schema", "ipcheck.fuzz-repro/1"},
            {"adapter", o.adapter},
            {"target", o.target},
            {"handle_layout", ctx.layout->name},
            {"setup", detail::kSetup},
            {"transport", o.transport},
            {"adapter_options", o.adapter_options},
            {"driver", setup.at("info").value("driver_version", "")},
            {"input", to_json(s)},
            {"bytes", to_hex(tried.data())}};
  if (!expect.empty()) j["expect"] = expect;
  if (!env_defect().empty()) j["environment"] = {{"IPCREF_DEFECT", env_defect()}};
  return j;
}

// Minimised onto a finding already kept (same kind, same fields): counted there.
bool merged_after_minimising(std::vector<FindingGroup>& groups, const std::vector<std::size_t>& finals, const FindingGroup& g) {
  for (const std::size_t fi : finals) {
    FindingGroup& f = groups[fi];
    if (f.minimal && f.first.verdict == g.first.verdict && f.fields == g.fields) {
      f.reports += g.reports;
      return true;
    }
  }
  return false;
}

// "<kind>-<fields>" ("-unchanged", "-audit"), made unique with "-2", "-3".
std::string finding_id(const FindingGroup& g, std::set<std::string>& used) {
  std::string joined;
  for (const auto& f : g.fields) joined += (joined.empty() ? "" : "+") + f;
  const std::string base = safe_id(std::string(verdict_name(g.first.verdict)) + "-" +
                                   (!g.original ? std::string("audit") : joined.empty() ? std::string("unchanged") : joined));
  std::string id = base;
  for (int n = 2; used.count(id); ++n) id = base + "-" + std::to_string(n);
  used.insert(id);
  return id;
}

// A finding's entry in the fuzz section (its mutation and reproducer are added by the caller).
json finding_entry(const FindingGroup& g, const std::string& id, const std::string& target) {
  // The replay's words for what the minimal input does (a death is told as first seen).
  const bool replayed = !g.replay_detail.empty() && g.reproduced.value_or(false) && g.first.verdict != Verdict::crash &&
                        g.first.verdict != Verdict::hang;
  json entry = {{"id", id},
                {"outcome", verdict_name(g.first.verdict)},
                {"clause", verdict_clause(g.first.verdict, target)},
                {"detail", replayed ? g.replay_detail : g.first.detail},
                {"result", replayed && g.replay_outcome.is_object() && !g.replay_outcome.empty() ? g.replay_outcome : g.first.outcome},
                {"fields", g.fields},
                {"mutation", ""},
                {"reports", g.reports},
                {"first_exec", g.first.exec},
                {"first_at_s", g.first.at_s},
                {"worker", g.first.worker},
                {"minimised", g.minimised},
                {"reproduced", g.reproduced ? json(*g.reproduced) : json(nullptr)},
                {"reproducer", nullptr},
                {"description", "findings/" + id + ".json"}};
  for (const char* k : {"errc", "native_name", "message", "exit"})
    if (!entry["result"].contains(k)) entry["result"][k] = "";
  if (!entry["result"].contains("native")) entry["result"]["native"] = 0;
  return entry;
}

}  // namespace

std::string env_defect() {
  const char* d = std::getenv("IPCREF_DEFECT");
  return d ? d : "";
}

void Campaign::minimise_and_write(const std::string& out_dir) {
  const fs::path dir = fs::path(out_dir) / "findings";
  std::vector<FindingGroup> groups = group_findings();
  const std::vector<std::size_t> finals = minimise(groups);
  std::set<std::string> used_ids;
  for (const std::size_t fi : finals) write_finding(groups[fi], finding_id(groups[fi], used_ids), dir);
}

// Reports grouped by kind and changed fields; the first of each group stands for it.
std::vector<FindingGroup> Campaign::group_findings() const {
  std::vector<FindingGroup> groups;
  std::map<std::string, std::size_t> by_key;
  for (const auto& f : raw_) {
    std::string key = verdict_name(f.verdict);
    std::optional<Symbolic> sym;
    std::vector<std::string> fields;
    if (f.input) {
      sym = symbolize(*f.ctx, *f.input);
      fields = mutated_fields(*sym, *f.ctx);
      for (const auto& x : fields) key += "|" + x;
    } else {
      key += "|audit";
    }
    auto [it, fresh] = by_key.try_emplace(key, groups.size());
    if (fresh) {
      FindingGroup g;
      g.first = f;
      g.original = sym;
      g.fields = fields;
      groups.push_back(std::move(g));
    }
    ++groups[it->second].reports;
  }
  return groups;
}

// Simplest first: a later group that still fails with only an earlier finding's fields is
// that finding again (one replay instead of a minimisation). Returns the groups kept, in the
// order they were decided.
std::vector<std::size_t> Campaign::minimise(std::vector<FindingGroup>& groups) {
  const auto t_start = Clock::now();
  std::vector<std::size_t> order(groups.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return groups[a].fields.size() < groups[b].fields.size();
  });
  std::vector<std::size_t> finals;
  bool out_of_time = false;
  for (const std::size_t gi : order) {
    FindingGroup& g = groups[gi];
    out_of_time = out_of_time || since(t_start) > o_.minimise_s;
    if (!g.original || out_of_time) {
      finals.push_back(gi);
      continue;
    }
    try {
      if (merged_by_replay(groups, finals, g)) continue;
      minimise_group(g, t_start);
      if (!merged_after_minimising(groups, finals, g)) finals.push_back(gi);
    } catch (const CampaignStop& e) {
      std::fprintf(stderr, "fuzz: minimisation stopped: %s\n", e.what());
      out_of_time = true;
      finals.push_back(gi);
    }
  }
  return finals;
}

// True when `g`'s input, cut down to the fields of a kept finding of the same kind that it
// changes too, still gives that kind: it is that finding again, and counts there.
bool Campaign::merged_by_replay(std::vector<FindingGroup>& groups, const std::vector<std::size_t>& finals, FindingGroup& g) {
  std::string why;
  for (const std::size_t fi : finals) {
    FindingGroup& f = groups[fi];
    if (f.first.verdict != g.first.verdict || !f.reproduced.value_or(false) ||
        !std::includes(g.fields.begin(), g.fields.end(), f.fields.begin(), f.fields.end()))
      continue;
    if (replay_exec(restrict_to(*g.original, f.fields, *g.first.ctx), nullptr, &why).verdict == g.first.verdict) {
      f.reports += g.reports;
      return true;
    }
  }
  return false;
}

// Replays `g`'s input, then drops changes one simplification at a time while it still gives
// the same kind, until none does or the minimisation time is spent.
void Campaign::minimise_group(FindingGroup& g, Clock::time_point t_start) {
  std::string why;
  Symbolic cur = *g.original;
  const Replayed first = replay_exec(cur, nullptr, &why);
  g.reproduced = first.verdict == g.first.verdict;
  g.replay_detail = first.detail;
  g.replay_outcome = first.outcome;
  bool changed = *g.reproduced;
  while (changed && since(t_start) <= o_.minimise_s) {
    changed = false;
    for (const auto& cand : simplifications(cur, *g.first.ctx)) {
      if (since(t_start) > o_.minimise_s) break;
      const Replayed v = replay_exec(cand, nullptr, &why);
      if (v.verdict != g.first.verdict) continue;
      cur = cand;
      g.replay_detail = v.detail;
      g.replay_outcome = v.outcome;
      g.minimised = true;
      changed = true;
      break;
    }
  }
  g.minimal = cur;
  g.fields = mutated_fields(cur, *g.first.ctx);
}

// The results' entry of a kept finding, and its description file beside its reproducer.
void Campaign::write_finding(const FindingGroup& g, const std::string& id, const fs::path& dir) {
  json entry = finding_entry(g, id, o_.target);
  reports::prepare_output_dir(dir.string());
  json description = entry;
  description["schema"] = "ipcheck.fuzz-finding/1";
  description["adapter"] = o_.adapter;
  description["target"] = o_.target;
  description["driver"] = {{"name", setup_.at("info").value("driver_name", "")},
                           {"version", setup_.at("info").value("driver_version", "")}};
  if (g.original) {
    const MutatorContext& ctx = *g.first.ctx;
    const Symbolic& s = g.minimal ? *g.minimal : *g.original;
    entry["mutation"] = describe(s, *ctx.layout);
    entry["reproducer"] = "findings/" + id + ".repro";
    description["mutation"] = entry["mutation"];
    description["reproducer"] = entry["reproducer"];
    description["handle_layout"] = ctx.layout->name;
    description["input"] = to_json(s);
    description["as_found"] = {{"mutation", describe(*g.original, *ctx.layout)},
                               {"fields", mutated_fields(*g.original, ctx)},
                               {"input", to_json(*g.original)},
                               {"bytes", to_hex(g.first.input->data())}};
    description["replay"] = "ipcheck fuzz --replay " + (dir / (id + ".repro")).string();
    write_json(dir / (id + ".repro"), repro_doc(o_, setup_, ctx, s, *g.first.input, verdict_name(g.first.verdict)));
  }
  write_json(dir / (id + ".json"), description);
  findings_.push_back(entry);
}

void Campaign::load_corpus() {
  if (o_.corpus_dir.empty()) return;
  std::error_code ec;
  if (!fs::is_directory(o_.corpus_dir, ec)) return;
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(o_.corpus_dir, ec))
    if (e.path().extension() == ".repro") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  for (const auto& p : files) {
    try {
      // A FIFO, a folder or a huge file named *.repro is skipped, saying why, never waited on.
      const json j = reports::read_json_file(p.string(), "corpus file", reports::kMaxSmallInputBytes);
      if (auto input = corpus_entry_input(j, o_.adapter, o_.target)) corpus_seeds_.push_back(std::move(*input));
    } catch (const std::exception& e) {
      std::fprintf(stderr, "fuzz: corpus file %s skipped: %s\n", reports::terminal_text(p.string()).c_str(),
                   reports::terminal_text(e.what()).c_str());
    }
  }
}

void Campaign::save_corpus() {
  if (o_.corpus_dir.empty() || corpus_found_.empty()) return;  // the command line checked the folder
  for (const auto& c : corpus_found_) {
    if (corpus_added_ >= 256) break;
    const Symbolic s = symbolize(*c.ctx, c.input);
    const json doc = repro_doc(o_, setup_, *c.ctx, s, c.input, "");
    const std::string text = doc.at("input").dump();
    std::uint64_t h = 0xcbf29ce484222325ull;
    for (char ch : text) h = (h ^ static_cast<unsigned char>(ch)) * 0x100000001b3ull;
    char name[40];
    std::snprintf(name, sizeof name, "%016llx.repro", static_cast<unsigned long long>(h));
    const fs::path p = fs::path(o_.corpus_dir) / name;
    if (fs::exists(p)) continue;
    json d = doc;
    d["seen"] = {{"verdict", c.verdict}, {"outcome", c.outcome}};
    write_json(p, d);
    ++corpus_added_;
  }
}

}  // namespace ipcheck::fuzz::campaign_detail
