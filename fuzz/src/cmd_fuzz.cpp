// `ipcheck fuzz`: a campaign of mutated handle payloads against one adapter, or the replay
// of one finding.
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdint>
#include <filesystem>
#include <optional>

#include "ipcheck/adapter.hpp"
#include "ipcheck/cli.hpp"
#include "ipcheck/fuzz/campaign.hpp"
#include "ipcheck/fuzz/oracle.hpp"
#include "ipcheck/reports/files.hpp"
#include "ipcheck/reports/report_set.hpp"
#include "ipcheck/reports/results.hpp"
#include "export_c.hpp"
#include "targets.hpp"
#include "ipcheck/run_record.hpp"
#include "ipcheck/reports/render.hpp"

namespace ipcheck::fuzz {
namespace {

using cli::kFailed;
using cli::kOk;
using cli::kUsage;
using cli::UsageError;
using nlohmann::json;

std::atomic<bool> g_interrupted{false};

std::string grouped(std::uint64_t n) {
  std::string s = std::to_string(n);
  for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3) s.insert(static_cast<std::size_t>(i), ",");
  return s;
}

int replay(const cli::Options& o, const CampaignOptions& base) {
  const std::string file = o.get("--replay");
  ReplayReport r;
  try {
    r = replay_reproducer(file, base);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  // A reproducer and the driver's answers are shown, never sent to the terminal as they are.
  const auto t = [](const std::string& s) { return reports::terminal_text(s); };
  std::printf("replay %s%s\n", t(file).c_str(), r.expected.empty() ? "" : t(" (found as " + r.expected + ")").c_str());
  for (const auto& ignored : r.ignored_options)
    std::printf("ignored  the reproducer's adapter option %s\n", t(ignored).c_str());
  if (!r.ran) {
    std::fprintf(stderr, "ipcheck fuzz: cannot replay: %s\n", t(r.reason).c_str());
    return kFailed;
  }
  std::printf("input    %s\n", t(r.input).c_str());
  std::printf("result   %s%s%s\n", t(r.verdict).c_str(), r.detail.empty() ? "" : ": ", t(r.detail).c_str());
  if (r.outcome.is_object() && r.outcome.value("errc", "") != "" && r.outcome.value("errc", "") != "success")
    std::printf("outcome  %s (%s): %s\n", t(r.outcome.value("errc", "")).c_str(),
                t(r.outcome.value("native_name", "")).c_str(), t(r.outcome.value("message", "")).c_str());
  const auto v = parse_verdict(r.verdict);
  const bool finding = v && is_finding(*v);
  if (finding)
    std::printf("%s\n", r.verdict == r.expected ? "reproduced" : "a finding, but not the one recorded");
  else
    std::printf("handled cleanly: %s\n", r.expected.empty() ? "no finding" : "the finding no longer reproduces");
  return finding ? kFailed : kOk;
}

cli::Options fuzz_command_options() {
  cli::Options o("fuzz", "--adapter NAME (--time S | --runs N) [-j N] [--seed K] [--corpus DIR] [--out DIR]\n"
                         "       ipcheck fuzz --replay FILE\n"
                         "       ipcheck fuzz --export-c FINDING -o repro.c [--results RESULTS.json | --out DIR]",
                 "Opens mutated handle bytes (field-aware and blind mutations of real exports) in\n"
                 "consumer processes and judges each open: it must fail cleanly, or map exactly one\n"
                 "exported allocation whose canary reads back in full. Crashes, hangs, leaks and\n"
                 "mappings of anything else are findings, saved minimised with a reproducer that\n"
                 "--replay reruns. Writes DIR/results.json (section \"fuzz\") and DIR/findings/.\n"
                 "--export-c writes one cuda or ur finding as a standalone C program (libcuda or\n"
                 "Unified Runtime's loader by dlopen, its own producer and consumer processes) that\n"
                 "exits 1 when the finding reproduces.\n"
                 "Exit status: 0 no finding, 1 findings (or the campaign could not run), 2 usage.");
  cli::add_adapter_options(o, "adapter to fuzz");
  o.value("--target", "memory|physical|event", "which handles to fuzz: memory (mem_get/mem_open), physical "
                                                "(phys_get/phys_open, then vm_map at a fuzzed offset and size), event "
                                                "(event_get/event_open, the opened event's state judged)", "memory")
      .value("--time", "S", "seconds of fuzzing")
      .value("--runs", "N", "inputs to open (split between workers)")
      .value("--jobs", "N", "consumer workers", "1")
      .value("--standby", "N", "consumers kept set up ahead of need, so that a worker whose context was lost is "
                               "replaced at once (default: as many as --jobs, 2 to 8; 0: replace in place)")
      .value("--schedule", "demote|flat", "demote: an input class (fields changed) that lost a worker's context, "
                                           "crashed or hung it runs once in 32 draws afterwards, half as often after each "
                                           "further poisoning (down to 1 in 4096); flat: no schedule", "demote")
      .value("--seed", "K", "campaign seed, decimal or 0x hex (with the exports' live values and the corpus the campaign grows, it decides the inputs)", "1")
      .value("--corpus", "DIR", "an existing folder: read seeds (*.repro) from it and add new interesting inputs to it")
      .value("--out", "DIR", "where results go", "ipcheck-results/fuzz-<adapter>")
      .value("--results", "FILE", "also put the fuzz section into this results.json (and re-render beside it)")
      .value("--hang", "S", "seconds an open may take before it is a hang", "2")
      .value("--minimise-time", "S", "seconds for minimising all findings", "30")
      .multi("--stop-on", "KIND", "end the campaign at the first finding of KIND (confused_deputy, crash, ...)")
      .value("--replay", "FILE", "rerun one finding's reproducer (findings/<id>.repro)")
      .value("--export-c", "FINDING", "write a cuda or ur finding (a findings/<id>.repro or <id>.json, or an id that "
                                      "--results or --out names) as a standalone C program")
      .value("-o", "FILE", "the C file --export-c writes")
      .flag("--quiet", "no live progress")
      .value("--skip-exit-code", "N", "exit with N when the adapter is not available here (for CTest)");
  return o;
}

// --export-c FINDING -o FILE: writes the program; no campaign.
int export_c_command(const cli::Options& o) {
  if (!o.has("-o")) throw UsageError("--export-c writes a C file: name it with -o FILE");
  for (const char* other : {"--replay", "--time", "--runs", "--corpus"})
    if (o.has(other)) throw UsageError(std::string("--export-c writes a program; it takes no ") + other);
  ExportCOptions x;
  x.finding = o.get("--export-c");
  x.results = o.get("--results");
  x.campaign_dir = o.has("--out") ? o.get("--out") : "ipcheck-results/fuzz-cuda";
  x.output = o.get("-o");
  try {
    std::printf("%s\n", export_c(x).c_str());
  } catch (const std::invalid_argument& e) {
    throw UsageError(std::string("--export-c ") + x.finding + ": " + e.what());
  }
  return kOk;
}

// What a campaign and a replay both take: the adapter, --target, --hang, --minimise-time,
// --quiet and --stop-on (checked in that order).
void read_fuzz_open_options(const cli::Options& o, CampaignOptions& c) {
  if (o.has("--target")) {
    c.target = o.get("--target");
    if (!detail::valid_target(c.target))
      throw UsageError("--target is '" + c.target + "'; give memory (memory handles), physical (physical-memory handles) or event (event handles)");
    if (o.has("--replay")) throw UsageError("--replay takes the target from the reproducer; drop --target");
  }
  c.hang_s = o.get_double("--hang", 0.05, 3600);
  c.minimise_s = o.get_double("--minimise-time", 0, 86400);
  c.progress = !o.has("--quiet");
  for (const auto& k : o.all("--stop-on")) {
    const auto v = parse_verdict(k);
    if (!v || !is_finding(*v))
      throw UsageError("--stop-on is '" + k + "'; use a finding kind: crash, hang, fd_leak, mapping_leak, "
                       "confused_deputy, stale_export, wrong_offset, wrong_size, unknown_mapping, "
                       "corrupt_mapping, unreadable_mapping, close_failed, context_lost, map_refused");
    c.stop_on.push_back(k);
  }
}

// --corpus DIR: an existing folder.
void check_fuzz_corpus(const std::string& dir) {
  std::error_code ec;
  if (dir.empty() || !std::filesystem::is_directory(dir, ec))
    throw UsageError("--corpus is '" + dir + "': " +
                     (std::filesystem::exists(dir, ec) ? "not a folder; give a folder"
                                                       : "no such folder; create it first (mkdir -p " + dir + ")"));
}

// What only a campaign takes: its budget (--time or --runs), workers, schedule, seed, corpus.
void read_fuzz_campaign_options(const cli::Options& o, CampaignOptions& c) {
  if (o.has("--time") == o.has("--runs"))
    throw UsageError("give the campaign's budget as --time S or --runs N (one of them)");
  if (o.has("--time")) c.time_s = o.get_double("--time", 0.1, 7 * 86400.0);
  if (o.has("--runs")) c.runs = o.get_u64("--runs", 1, std::uint64_t{1} << 48);
  c.jobs = o.get_int("--jobs", 1, 256);
  if (o.has("--standby")) c.standby = o.get_int("--standby", 0, 256);
  if (o.has("--schedule")) {
    const std::string sch = o.get("--schedule");
    if (sch != "demote" && sch != "flat") throw UsageError("--schedule is '" + sch + "'; give demote or flat");
    c.demote = sch == "demote";
  }
  c.seed = o.get_u64("--seed", 0, UINT64_MAX, /*hex_allowed=*/true);
  c.corpus_dir = o.get("--corpus");
  if (o.has("--corpus")) check_fuzz_corpus(c.corpus_dir);
}

// --results FILE, read before the campaign, so a bad file costs nothing ("": none).
reports::Results fuzz_results_to_merge(const std::string& results_path) {
  if (results_path.empty()) return {};
  try {
    return read_results_to_merge(results_path);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
}

// Puts the campaign's fuzz section into the --results file and re-renders beside it.
void merge_fuzz_section(const std::string& results_path, reports::Results& merged, const json& fuzz,
                        const std::string& out, std::vector<std::string>& written) {
  namespace fs = std::filesystem;
  merged.fuzz = fuzz;
  const std::string dir = reports::results_folder(results_path);
  // Reproducer paths are relative to the campaign's folder; make them relative to the
  // results.json they now live in. A results file's reproducer stays inside its folder
  // (reports::reproducer_path): a campaign folder outside it has its reproducers (and their
  // descriptions) copied into the results' findings/.
  for (auto& x : merged.fuzz["findings"]) {
    if (!x.contains("reproducer") || !x["reproducer"].is_string()) continue;
    const fs::path from = fs::path(out) / x["reproducer"].get<std::string>();
    const fs::path rel = fs::proximate(from, dir);
    if (!rel.empty() && *rel.begin() != ".." && rel.is_relative()) {
      x["reproducer"] = rel.string();
      continue;
    }
    const fs::path to = fs::path(dir) / "findings" / from.filename();
    fs::create_directories(to.parent_path());
    for (const char* ext : {".repro", ".json"}) {
      fs::path src = from, dst = to;
      src.replace_extension(ext);
      dst.replace_extension(ext);
      if (ext == std::string(".json") && !fs::exists(src)) continue;
      reports::write_file_atomic(dst.string(), reports::read_regular_file(src.string(), "reproducer",
                                                                          reports::kMaxSmallInputBytes));
      written.push_back(dst.string());
    }
    x["reproducer"] = (fs::path("findings") / from.filename()).string();
  }
  for (const auto& p : write_merged_results(results_path, merged)) written.push_back(p);
}

// The campaign's summary line, its outcomes and each finding with how to replay it.
void print_fuzz_summary(const std::string& adapter, const std::string& out, const json& f) {
  const std::string status = f.value("status", "");
  const auto& findings = f.at("findings");
  const auto t = [](const std::string& s) { return reports::terminal_text(s); };
  std::printf("fuzz %s (%s %s, layout %s): %s executions in %.1f s (%.0f/s, %.0f/s per worker); %zu finding%s%s\n",
              adapter.c_str(), t(f["driver"].value("name", "")).c_str(), t(f["driver"].value("version", "")).c_str(),
              f["handle_layout"].value("name", "?").c_str(), grouped(f.value("executions", 0ull)).c_str(),
              f.value("duration_s", 0.0), f.value("exec_per_s", 0.0), f.value("exec_per_s_per_worker", 0.0),
              findings.size(), findings.size() == 1 ? "" : "s",
              status == "completed" ? "" : t(" [" + status + ": " + f.value("reason", "") + "]").c_str());
  std::string hist;
  for (const auto& [k, v] : f.at("outcomes").items()) hist += (hist.empty() ? "" : ", ") + k + " " + grouped(v.get<std::uint64_t>());
  if (!hist.empty()) std::printf("outcomes: %s\n", hist.c_str());
  for (const auto& x : findings) {
    std::printf("finding %s: %s\n", t(x.value("id", "")).c_str(), t(x.value("detail", "")).c_str());
    if (!x.value("mutation", std::string()).empty()) std::printf("  input   %s\n", t(x.value("mutation", "")).c_str());
    if (x["reproducer"].is_string())
      std::printf("  replay  ipcheck fuzz --replay %s\n",
                  (std::filesystem::path(out) / x["reproducer"].get<std::string>()).c_str());
  }
}

// What the campaign's end says, and its exit status.
int finish_fuzz(const std::string& adapter, const std::string& out, const json& f,
                const std::vector<std::string>& written, std::optional<int> skip_code) {
  auto print_written = [&] {
    for (const auto& p : written) std::printf("wrote %s\n", p.c_str());
  };
  const std::string status = f.value("status", "");
  if (status == "skipped") {
    std::printf("fuzz %s: skipped: %s\n", adapter.c_str(), reports::terminal_text(f.value("reason", "")).c_str());
    return skip_code ? *skip_code : kOk;
  }
  if (status == "aborted") {
    std::fprintf(stderr, "fuzz %s: aborted: %s\n", adapter.c_str(), reports::terminal_text(f.value("reason", "")).c_str());
    print_written();
    return kFailed;
  }
  print_fuzz_summary(adapter, out, f);
  print_written();
  if (status != "completed" || !f.at("findings").empty()) return kFailed;
  return kOk;
}

int fuzz(const std::vector<std::string>& args) {
  cli::Options o = fuzz_command_options();
  return cli::run_command("fuzz", [&] {
    if (!o.parse(args)) return kOk;
    if (o.has("--export-c")) return export_c_command(o);
    if (o.has("-o")) throw UsageError("-o names the C file of --export-c; a campaign writes to --out DIR");
    CampaignOptions c;
    const cli::AdapterChoice adapter = cli::adapter_choice(o);
    c.adapter = adapter.adapter;
    c.transport = adapter.transport;
    c.adapter_options = adapter.options;
    const std::optional<int> skip_code = cli::skip_exit_code(o);
    read_fuzz_open_options(o, c);
    ::signal(SIGPIPE, SIG_IGN);
    if (o.has("--replay")) {
      if (o.has("--time") || o.has("--runs"))
        throw UsageError("--replay reruns one input; it takes no --time or --runs");
      return replay(o, c);
    }
    read_fuzz_campaign_options(o, c);
    const std::string out = o.has("--out") ? o.get("--out") : "ipcheck-results/fuzz-" + c.adapter;
    cli::prepare_output_option("--out", out);
    const std::string results_path = o.get("--results");
    reports::Results merged = fuzz_results_to_merge(results_path);
    c.interrupted = &g_interrupted;
    cli::install_interrupt_handlers(&g_interrupted);

    std::vector<std::string> written;
    const reports::Results r = run_campaign(c, out, &written);
    if (!results_path.empty() && !r.fuzz.is_null()) merge_fuzz_section(results_path, merged, r.fuzz, out, written);
    return finish_fuzz(c.adapter, out, r.fuzz, written, skip_code);
  });
}

const cli::CommandRegistration registered_fuzz{{"fuzz", "fuzz an adapter's handle payloads; replay a finding", fuzz}};

}  // namespace
}  // namespace ipcheck::fuzz
