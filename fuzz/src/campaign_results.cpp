// The campaign's results: its fuzz section and run record, run_campaign, and --replay.
#include <algorithm>

#include "campaign_impl.hpp"

namespace ipcheck::fuzz {
namespace campaign_detail {

json Campaign::section() const {
  json j;
  j["schema"] = "ipcheck.fuzz/1";
  j["status"] = status;
  j["reason"] = reason;
  j["adapter"] = o_.adapter;
  j["target"] = detail::target_title(o_.target, o_.adapter);
  const json info = setup_.is_object() ? setup_.value("info", json::object()) : json::object();
  j["driver"] = {{"name", info.value("driver_name", "")}, {"version", info.value("driver_version", "")}};
  json layout = json::object();
  if (!slots_.empty() && slots_.front()->ctx) {
    const HandleLayout& l = *slots_.front()->ctx->layout;
    json fields = json::array();
    for (const auto& f : l.fields) fields.push_back(f.name);
    layout = {{"name", l.name}, {"knowledge", l.knowledge}, {"size", l.size}, {"fields", fields}};
  } else if (!info.empty()) {
    layout = {{"name", info.value("handle_layout", "")}};
  }
  j["handle_layout"] = layout;
  j["transport"] = info.value("transport", "");
  j["setup"] = detail::kSetup;
  j["unexported"] = setup_.is_object() ? setup_.value("unexported", json::array()) : json::array();
  j["calibration"] = calibration_;
  j["seed"] = o_.seed;
  j["jobs"] = slots_.empty() ? o_.jobs : static_cast<int>(slots_.size());
  j["budget"] = {{"time_s", o_.time_s}, {"runs", o_.runs}};
  const double duration = fuzzed_ ? std::chrono::duration<double>(t_end_ - t0_).count() : 0.0;
  const std::uint64_t n = executions();
  j["duration_s"] = duration;
  j["executions"] = n;
  j["exec_per_s"] = duration > 0 ? n / duration : 0.0;
  j["exec_per_s_per_worker"] = duration > 0 ? n / duration / static_cast<double>(std::max<std::size_t>(1, slots_.size())) : 0.0;
  int started = 0;
  for (const auto& s : slots_) started += s->generations;
  j["workers"] = {{"started", started}, {"replaced", replaced_}, {"retired", retired_}};
  json per = json::array();
  for (const auto& s : slots_) {
    const std::uint64_t e = s->page->get().executions.load() + s->lost;
    per.push_back({{"worker", s->index}, {"executions", e}, {"exec_per_s", duration > 0 ? e / duration : 0.0},
                   {"generations", s->generations}, {"recovery_s", s->recovery_s}});
  }
  j["per_worker"] = per;
  j["time_s"] = time_json();
  j["time_by_verdict"] = time_by_verdict_json();
  j["recovery"] = recovery_json();
  j["schedule"] = schedule_json();
  add_counts(j);
  j["corpus"] = {{"dir", o_.corpus_dir}, {"loaded", corpus_seeds_.size()}, {"added", corpus_added_}};
  j["findings"] = findings_;
  return j;
}

// What standbys saved: hand-overs, how many found one ready, the waits, set-up times.
json Campaign::recovery_json() const {
  auto median = [](std::vector<double> v) {
    if (v.empty()) return 0.0;
    std::sort(v.begin(), v.end());
    return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
  };
  return {{"standby", standby_},
          {"hand_overs", waits_s_.size()},
          {"from_standby", from_standby_},
          {"median_wait_ms", median(waits_s_) * 1000},
          {"max_wait_ms", waits_s_.empty() ? 0.0 : *std::max_element(waits_s_.begin(), waits_s_.end()) * 1000},
          {"init_median_s", median(init_s_)},
          {"consumers_started", init_s_.size()}};
}

// Outcomes by code, native codes, verdicts and finding hits, summed over the workers' pages
// (crashes and hangs, which no page counts, from the campaign's own records).
void Campaign::add_counts(json& j) const {
  json outcomes = json::object();
  for (const auto& [k, v] : outcome_counts()) outcomes[k] = v;
  j["outcomes"] = outcomes;
  std::map<std::string, std::uint64_t> natives, verdicts;
  std::uint64_t hits = 0;
  for (const auto& s : slots_) {
    const WorkerPage& p = s->page->get();
    for (const auto& ns : p.natives)
      if (ns.used) natives[ns.name] += ns.count.load();
    for (int i = 0; i < kVerdictCount; ++i)
      if (const auto v = p.verdicts[i].load()) verdicts[verdict_name(static_cast<Verdict>(i))] += v;
    hits += p.findings.load();
  }
  for (const auto& f : raw_)
    if (f.verdict == Verdict::crash || f.verdict == Verdict::hang) {
      ++verdicts[verdict_name(f.verdict)];
      ++hits;
    }
  j["native_outcomes"] = natives;
  j["verdicts"] = verdicts;
  j["finding_hits"] = hits;
}

json Campaign::time_json() const {
  std::uint64_t ns[5] = {};
  for (const auto& s : slots_) {
    const detail::TimeSpent& t = s->page->get().ns;
    ns[0] += t.mutate.load();
    ns[1] += t.open.load();
    ns[2] += t.oracle.load();
    ns[3] += t.close.load();
    ns[4] += t.channel.load();
  }
  double recovery = 0;
  for (const auto& s : slots_) recovery += s->recovery_s;
  return {{"mutate", ns[0] / 1e9}, {"open", ns[1] / 1e9}, {"oracle", ns[2] / 1e9}, {"close", ns[3] / 1e9},
          {"channel", ns[4] / 1e9}, {"recovery", recovery},
          {"startup", fuzzed_ ? std::chrono::duration<double>(t0_ - launch_t0_).count() : 0.0}};
}

// Worker-seconds of whole executions by the oracle's verdict, and the mean per execution:
// which kinds of input the campaign's time goes to (a crash or hang, which ends its worker
// mid-execution, is not timed).
json Campaign::time_by_verdict_json() const {
  std::uint64_t ns[kVerdictCount] = {}, n[kVerdictCount] = {};
  for (const auto& s : slots_) {
    const WorkerPage& p = s->page->get();
    for (int i = 0; i < kVerdictCount; ++i) {
      ns[i] += p.verdict_ns[i].load();
      n[i] += p.verdicts[i].load();
    }
  }
  json j = json::object();
  for (int i = 0; i < kVerdictCount; ++i)
    if (n[i] != 0 && ns[i] != 0)
      j[verdict_name(static_cast<Verdict>(i))] = {{"time_s", ns[i] / 1e9}, {"mean_us", ns[i] / 1e3 / static_cast<double>(n[i])}};
  return j;
}

// The demoted classes and their rates, in order: what "go" and "schedule" tell the workers.
std::vector<wire::Demotion> Campaign::schedule_demotions() const {
  std::vector<wire::Demotion> out;
  for (const auto& d : schedule_) out.push_back({d.cls, d.keep_one_in});
  return out;
}

json Campaign::schedule_json() const {
  json classes = json::array();
  for (std::size_t k = 0; k < schedule_.size(); ++k) {
    std::uint64_t n = 0;
    for (const auto& s : slots_) n += s->page->get().demoted[k].load();
    classes.push_back({{"class", schedule_[k].cls}, {"verdict", schedule_[k].verdict}, {"since_s", schedule_[k].since_s},
                       {"demoted", n}, {"poisonings", schedule_[k].poisonings}, {"keep_one_in", schedule_[k].keep_one_in}});
  }
  return {{"demote", o_.demote}, {"keep_one_in", detail::kDemotedKeepOneIn},
          {"keep_one_in_most", detail::kDemotedKeepOneInMost}, {"classes", classes}};
}

namespace {

reports::RunInfo run_info(const CampaignOptions& o, const json& setup, const std::string& start, double duration) {
  reports::RunInfo r;
  stamp_run(r, o.adapter, start);
  if (const AdapterDesc* d = find_adapter(o.adapter)) r.profiles = d->profiles;
  const json info = setup.is_object() ? setup.value("info", json::object()) : json::object();
  r.driver_name = info.value("driver_name", "");
  r.driver_version = info.value("driver_version", "");
  r.transport = info.value("transport", "");
  r.duration_s = duration;
  r.audit = "off";
  r.audit_note = "fuzz campaigns audit each open themselves (descriptor and mapping probes)";
  r.options = {{"command", "fuzz"}, {"time_s", o.time_s}, {"runs", o.runs}, {"jobs", o.jobs}, {"seed", o.seed},
               {"standby", o.standby}, {"demote", o.demote},
               {"corpus", o.corpus_dir}, {"transport", o.transport}, {"adapter_options", o.adapter_options},
               {"hang_s", o.hang_s}, {"stop_on", o.stop_on}};
  if (!env_defect().empty()) r.options["environment"] = {{"IPCREF_DEFECT", env_defect()}};
  return r;
}

}  // namespace

}  // namespace campaign_detail

using campaign_detail::Campaign;
using campaign_detail::CampaignStop;
using campaign_detail::Clock;
using campaign_detail::json;
using campaign_detail::run_info;
using campaign_detail::since;

reports::Results run_campaign(const CampaignOptions& o, const std::string& out_dir, std::vector<std::string>* written) {
  const std::string start = iso_now();
  const auto t0 = Clock::now();
  const std::size_t fds_at_start = count_open_fds();
  reports::Results results;
  json section;
  json setup;
  {
    Campaign c(o);
    try {
      c.load_corpus();
      c.start_dead_pid();
      c.start_producer();
      c.fuzz();
      c.minimise_and_write(out_dir);
      c.save_corpus();
    } catch (const CampaignStop& e) {
      c.status = e.skip ? "skipped" : "aborted";
      c.reason = e.what();
    } catch (const std::exception& e) {
      // A broken message or a file that cannot be written: the campaign ends, the results say why.
      c.status = "aborted";
      c.reason = std::string("the campaign failed: ") + e.what();
    }
    setup = c.setup();
    section = c.section();
  }
  results.run = run_info(o, setup, start, since(t0));
  const std::vector<std::string> orphans = reap_orphans();
  results.run.runner = {{"fds_at_start", fds_at_start}, {"fds_at_end", count_open_fds()}, {"orphans_reaped", orphans}};
  results.fuzz = section;
  results.summary = reports::summarize(results.cases);
  const auto paths = reports::write_report_set(out_dir, results);
  if (written) *written = paths;
  return results;
}

ReplayReport replay_reproducer(const std::string& path, const CampaignOptions& base) {
  ReplayReport r;
  json doc;
  try {
    doc = reports::read_json_file(path, "reproducer", reports::kMaxSmallInputBytes);
  } catch (const reports::FileError& e) {
    throw std::invalid_argument(e.what());
  }
  // Every field this reads is checked for its shape, and a wrong one is named.
  auto shape = [&](const std::string& what) {
    return std::invalid_argument("reproducer '" + path + "': " + what + "; give a findings/<id>.repro that ipcheck fuzz wrote");
  };
  ReproFile f;
  try {
    f = reproducer_from_json(doc);
  } catch (const std::invalid_argument& e) {
    throw shape(e.what());
  }
  if (f.setup != detail::kSetup)
    throw std::invalid_argument("reproducer '" + path + "' was made with set-up \"" + f.setup +
                                "\"; this ipcheck builds \"" + detail::kSetup + "\": replay it with the ipcheck that found it");
  CampaignOptions o = base;
  if (!f.adapter.empty()) o.adapter = f.adapter;
  const AdapterDesc* desc = find_adapter(o.adapter);
  if (!desc) throw shape("field \"adapter\" is '" + o.adapter + "', no adapter of this ipcheck");
  o.target = f.target;
  if (!f.transport.empty()) o.transport = f.transport;
  // A reproducer chooses no code and no path: an option that names a library, a loader or
  // a file is taken only from the command line (or the environment) of whoever replays it,
  // and so is any key the adapter does not take. The command line's own options win.
  for (const auto& [k, v] : trusted_adapter_options(f, o.adapter, desc->options, desc->path_options, r.ignored_options))
    o.adapter_options.try_emplace(k, v);
  o.jobs = 0;
  o.progress = false;
  r.expected = f.expect;
  const Symbolic s = f.input;
  Campaign c(o);
  try {
    c.start_dead_pid();
    c.start_producer();
    std::string why;
    const auto v = c.replay_exec(s, &r.input, &why);
    if (!why.empty()) {
      r.reason = why;
      return r;
    }
    r.ran = true;
    r.verdict = verdict_name(v.verdict);
    r.detail = v.detail;
    r.outcome = v.outcome;
  } catch (const CampaignStop& e) {
    r.reason = e.what();
  }
  return r;
}

}  // namespace ipcheck::fuzz
