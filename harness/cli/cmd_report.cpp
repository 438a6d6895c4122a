// `ipcheck report`: renders, compares, merges and summarises results.json files (render,
// diff, history, first-bad, merge, baseline), from files or from a results store (--db).
// Everything is computed from the results alone; nothing is run.
#include <cstdio>
#include <iostream>
#include <optional>
#include <set>
#include <stdexcept>

#include "ipcheck/cli.hpp"
#include "ipcheck/reports/compare.hpp"
#include "ipcheck/reports/diff.hpp"
#include "ipcheck/reports/files.hpp"
#include "ipcheck/reports/history.hpp"
#include "ipcheck/reports/merge.hpp"
#include "ipcheck/reports/render.hpp"
#include "ipcheck/reports/stable.hpp"
#include "ipcheck/reports/store.hpp"
#include "ipcheck/verdict.hpp"

namespace ipcheck::cli {
namespace {

// A file that cannot be read or written: reported like a usage error (exit 2), never as
// a regression (exit 1), so that CI tells the two apart.
using reports::FileError;

reports::Results load(const std::string& path) {
  try {
    return reports::read_results(path);
  } catch (const reports::SchemaError& e) {
    throw FileError(e.what());
  }
}

void add_output(Options& o) {
  o.value("-o", "OUT", "write to OUT instead of standard output").value("--output", "OUT", "the same as -o");
}

// Writes to -o OUT when given, else to standard output: there through the one terminal
// escaper (reports::terminal_text) whatever the format, so that no renderer's line reaches a
// terminal with a control sequence (each renderer escapes its fields too: this is the net).
void emit(const Options& o, const std::string& content) {
  if (o.has("-o") && o.has("--output")) throw UsageError("-o and --output are the same option; give one");
  const std::string out = o.has("-o") ? o.get("-o") : o.get("--output");
  if (out.empty() || out == "-") {
    std::cout << reports::terminal_text(content);
    std::cout.flush();
    if (!std::cout) throw FileError("cannot write to standard output (a full disk, a closed pipe?); give -o FILE");
    return;
  }
  reports::write_file_atomic(out, content);
}

std::string format_of(const Options& o, std::initializer_list<const char*> allowed) {
  const std::string f = o.get("--format");
  std::string list;
  for (const char* a : allowed) {
    if (f == a) return f;
    list += (list.empty() ? "" : ", ") + std::string(a);
  }
  throw UsageError("--format is '" + f + "'; use one of " + list);
}

int guarded(const std::string& name, const std::function<int()>& body) {
  return run_command(name, [&] {
    try {
      return body();
    } catch (const FileError& e) {
      std::fprintf(stderr, "ipcheck %s: %s\n", name.c_str(), reports::terminal_text(e.what()).c_str());
      return kUsage;
    } catch (const reports::StoreError& e) {
      std::fprintf(stderr, "ipcheck %s: %s\n", name.c_str(), reports::terminal_text(e.what()).c_str());
      return kUsage;
    } catch (const reports::MergeError& e) {
      std::fprintf(stderr, "ipcheck %s: %s\n", name.c_str(), reports::terminal_text(e.what()).c_str());
      return kUsage;
    }
  });
}

// --db FILE with --adapter, --gpu, --last: the runs a question is about.
void add_store_selection(Options& o) {
  o.value("--db", "STORE", "a results store (ipcheck store add) instead of files: an SQLite file, or postgresql://...")
      .value("--adapter", "NAME", "with --db: only runs of this adapter")
      .value("--gpu", "GLOB", "with --db: only runs on these GPU models (device names; a bare word matches anywhere)")
      .value("--last", "N", "with --db: only the last N runs, in the store's order (driver version, then start)")
      .value("--busy-timeout", "S", "with --db: seconds to wait while another process writes the store", "30");
}

// --busy-timeout S: how long opening the store waits for another writer's lock.
double store_busy_timeout(const Options& o) {
  return o.has("--busy-timeout") ? o.get_double("--busy-timeout", 0, 86400) : reports::Store::kDefaultBusyTimeoutS;
}

reports::RunFilter store_selection(const Options& o) {
  for (const char* k : {"--adapter", "--gpu", "--last", "--busy-timeout"})
    if (o.has(k) && !o.has("--db")) throw UsageError(std::string(k) + " selects runs of a store; give --db FILE too");
  reports::RunFilter f;
  f.adapter = o.get("--adapter");
  f.gpu = o.get("--gpu");
  if (o.has("--last")) f.last = o.get_int("--last", 1, 1000000);
  return f;
}

int render(const std::vector<std::string>& args) {
  Options o("report render", "FILE [--format md|html|junit] [--baseline OLD] [-o OUT]",
            "Renders a results.json as Markdown, a self-contained HTML page or JUnit XML.\n"
            "With --baseline, the report opens with the regressions against that older run.\n"
            "Exit status: 0 when rendered (whatever the results say), 2 for a bad command line\n"
            "or a file that cannot be read.");
  o.positional("FILE", "a results.json written by ipcheck run")
      .value("--format", "FORMAT", "md, html or junit", "md")
      .value("--baseline", "OLD", "an older results.json to name regressions against");
  add_output(o);
  return guarded("report render", [&] {
    if (!o.parse(args)) return kOk;
    const std::string format = format_of(o, {"md", "html", "junit"});
    const reports::Results r = load(o.positionals()[0]);
    std::optional<reports::Diff> diff;
    reports::RenderOptions ro;
    if (o.has("--baseline")) {
      diff = reports::diff_results(load(o.get("--baseline")), r, o.get("--baseline"), o.positionals()[0]);
      ro.baseline = &*diff;
    }
    if (format == "junit" && ro.baseline) throw UsageError("--baseline does not apply to junit; use md or html");
    emit(o, format == "md" ? reports::render_markdown(r, ro)
                           : format == "html" ? reports::render_html(r, ro) : reports::render_junit(r));
    return kOk;
  });
}

int diff(const std::vector<std::string>& args) {
  Options o("report diff", "OLD NEW [--format text|md|json] [-o OUT]",
            "Compares two runs: regressions (a worse status in the order pass < xfail < fail < leak\n"
            "< timeout < crash), new failures (a case absent, skipped, incomplete or in error in\n"
            "the old run that fails, leaks, times out or crashes now; a clause not run before that\n"
            "fails now), fixes, other status changes (to or from skip or incomplete, never a\n"
            "regression), new and removed cases, observation changes, and benchmark changes beyond\n"
            "the noise of both runs. Regressions come first, the worst first.\n"
            "Exit status: 1 when a case regressed or failed anew, 0 otherwise, 2 for a bad command\n"
            "line or a file that cannot be read.");
  o.positional("OLD", "the baseline results.json").positional("NEW", "the results.json to judge")
      .value("--format", "FORMAT", "text, md or json", "text");
  add_output(o);
  return guarded("report diff", [&] {
    if (!o.parse(args)) return kOk;
    const std::string format = format_of(o, {"text", "md", "json"});
    const auto& p = o.positionals();
    const reports::Diff d = reports::diff_results(load(p[0]), load(p[1]), p[0], p[1]);
    emit(o, format == "text" ? reports::render_diff_text(d)
                             : format == "md" ? reports::render_diff_markdown(d) : reports::dump_json(reports::diff_to_json(d), 2) + "\n");
    return d.fails_gate() ? kFailed : kOk;
  });
}

int history(const std::vector<std::string>& args) {
  Options o("report history", "FILE... | --db FILE [--adapter A] [--gpu G] [--last N]  [--format text|md|html] [--changed] [-o OUT]",
            "Summarises several runs side by side, one column per run in the order given\n"
            "(oldest first reads best): status counts, every case's status per run,\n"
            "observations and benchmark medians; html adds the per-version trend picture.\n"
            "With --db, the runs of a results store, ordered by driver version (dotted numbers),\n"
            "then start: the matrix of cases against driver versions, the same report as the\n"
            "files it was made from.");
  o.positional("FILE", "results.json files, one per run", true, false)
      .value("--format", "FORMAT", "text, md or html", "text")
      .flag("--changed", "only the cases whose status is not the same in every run");
  add_store_selection(o);
  add_output(o);
  return guarded("report history", [&] {
    if (!o.parse(args)) return kOk;
    const std::string format = format_of(o, {"text", "md", "html"});
    const reports::RunFilter filter = store_selection(o);
    std::vector<reports::HistoryRun> runs;
    if (o.has("--db")) {
      if (!o.positionals().empty())
        throw UsageError("give results.json files or --db FILE, not both ('" + o.positionals()[0] + "' and --db)");
      const auto store = reports::Store::open(o.get("--db"), false, store_busy_timeout(o));
      for (const auto& r : store.runs(filter)) runs.push_back({r.label, store.load(r.id)});
      if (runs.empty())
        throw FileError(store.path() + ": no run matches" + (filter.adapter.empty() ? "" : " --adapter " + filter.adapter) +
                        (filter.gpu.empty() ? "" : " --gpu " + filter.gpu) + "; 'ipcheck store ls --db " + store.path() +
                        "' lists the runs");
    } else {
      if (o.positionals().empty()) throw UsageError("missing FILE (results.json files), or give --db FILE");
      for (const auto& p : o.positionals()) runs.push_back({p, load(p)});
    }
    reports::HistoryOptions ho;
    ho.changed_only = o.has("--changed");
    emit(o, format == "text" ? reports::render_history_text(runs, ho)
                             : format == "md" ? reports::render_history_markdown(runs, ho)
                                              : reports::render_history_html(runs, ho));
    return kOk;
  });
}

// The selected runs that have the case, all of one adapter and driver (their versions
// compare); a UsageError or FileError naming the problem otherwise.
std::vector<reports::StoredRun> runs_with_case(const Options& o, const std::vector<reports::StoredRun>& runs,
                                               const std::vector<reports::Store::CaseRow>& rows, const std::string& id) {
  std::set<long long> with_case;
  for (const auto& r : rows) with_case.insert(r.run);
  std::set<std::string> adapters;
  std::vector<reports::StoredRun> kept;
  for (const auto& r : runs)
    if (with_case.count(r.id)) {
      adapters.insert(r.adapter + " (" + r.driver_name + ")");
      kept.push_back(r);
    }
  if (kept.empty())
    throw FileError(reports::redact_store_name(o.get("--db")) + ": no selected run has case '" + id +
                    "'; 'ipcheck store ls --db " + reports::redact_store_name(o.get("--db")) +
                    "' lists the runs, 'ipcheck list' the case ids");
  if (adapters.size() > 1) {
    std::string list;
    for (const auto& a : adapters) list += (list.empty() ? "" : ", ") + a;
    throw UsageError("the store has '" + id + "' on several adapters or drivers (" + list +
                     "), whose versions do not compare; choose one with --adapter (and --gpu)");
  }
  return kept;
}

// --format json: the case, where it ran, the first bad and last good versions, every version.
std::string first_bad_json(const std::string& id, const std::vector<reports::StoredRun>& kept,
                           const std::set<std::string>& gpus, const reports::FirstBad& fb) {
  nlohmann::json versions = nlohmann::json::array();
  for (const auto& v : fb.versions) {
    nlohmann::json unjudged = nlohmann::json::array();
    for (const auto u : v.unjudged) unjudged.push_back(reports::to_string(u));
    versions.push_back({{"version", v.version},
                        {"status", v.status ? nlohmann::json(reports::to_string(*v.status)) : nlohmann::json()},
                        {"reason", v.reason},
                        {"unjudged", unjudged},
                        {"runs", v.runs}});
  }
  auto at = [&](const std::optional<std::size_t>& i) { return i ? versions[*i] : nlohmann::json(); };
  return reports::dump_json(nlohmann::json{{"case", id},
                        {"adapter", kept.front().adapter},
                        {"driver", kept.front().driver_name},
                        {"gpus", gpus},
                        {"first_bad", at(fb.first_bad)},
                        {"last_good", at(fb.last_good)},
                        {"versions", versions}},
                            2) +
         "\n";
}

// --format text: a heading, the first bad and last good versions, then every version.
std::string first_bad_text(const std::string& id, const std::vector<reports::StoredRun>& kept,
                           const std::set<std::string>& gpus, const reports::FirstBad& fb) {
  std::string gpu_list;
  for (const auto& g : gpus) gpu_list += (gpu_list.empty() ? "" : "; ") + (g.empty() ? std::string("?") : g);
  auto statuses = [](const reports::VersionVerdict& v) {
    std::string s = v.status ? reports::to_string(*v.status) : "(not judged)";
    for (const auto u : v.unjudged) s += std::string(s.empty() ? "" : ", ") + reports::to_string(u);
    return s;
  };
  const auto t = [](const std::string& x) { return reports::terminal_text(x); };
  std::string s = "ipcheck report first-bad: " + t(id) + " on " + t(kept.front().adapter) + " (" +
                  t(kept.front().driver_name) + "; " + t(gpu_list) + "): " + std::to_string(kept.size()) + " run" +
                  (kept.size() == 1 ? "" : "s") + ", " + std::to_string(fb.versions.size()) + " driver version" +
                  (fb.versions.size() == 1 ? "" : "s") + "\n";
  if (fb.first_bad) {
    const auto& bad = fb.versions[*fb.first_bad];
    const auto& good = fb.versions[*fb.last_good];
    s += "  last good  " + t(good.version) + "  " + reports::to_string(*good.status) + "\n";
    s += "  first bad  " + t(bad.version) + "  " + reports::to_string(*bad.status) +
         (bad.reason.empty() ? "" : ": " + t(bad.reason)) + "\n";
  } else {
    s += "  never got worse on these versions\n";
  }
  s += "versions, oldest first (the worst status over each version's runs):\n";
  std::size_t w = 0;
  for (const auto& v : fb.versions) w = std::max(w, t(v.version).size());
  for (std::size_t i = 0; i < fb.versions.size(); ++i) {
    const auto& v = fb.versions[i];
    const std::string version = t(v.version);
    std::string line = "  " + version + std::string(w - version.size() + 2, ' ') + statuses(v);
    line += "  (" + std::to_string(v.runs.size()) + " run" + (v.runs.size() == 1 ? "" : "s") + ")";
    if (fb.first_bad && i == *fb.first_bad) line += "  <- first bad";
    if (fb.last_good && i == *fb.last_good) line += "  <- last good";
    s += line + "\n";
  }
  return s;
}

int first_bad(const std::vector<std::string>& args) {
  Options o("report first-bad", "CASE --db FILE [--adapter A] [--gpu G] [--format text|json] [-o OUT]",
            "The first driver version in a results store where CASE got worse, and the last good one.\n"
            "Versions in dotted-number order; on each, the worst status over its runs (pass < xfail <\n"
            "fail < leak < timeout < crash). skip, error, incomplete and flaky judge nothing: such a\n"
            "version is passed over, and listed with what it saw.\n"
            "Exit status: 1 when the case got worse on some version, 0 when it never did, 2 for a bad\n"
            "command line, a store that cannot be read, or a case no selected run has.");
  o.positional("CASE", "a case id (with its injection point, if any)").value("--format", "FORMAT", "text or json", "text");
  add_store_selection(o);
  add_output(o);
  return guarded("report first-bad", [&] {
    if (!o.parse(args)) return kOk;
    const std::string format = format_of(o, {"text", "json"});
    if (!o.has("--db")) throw UsageError("first-bad reads a results store; give --db FILE (ipcheck store add fills one)");
    const reports::RunFilter filter = store_selection(o);
    const std::string id = o.positionals()[0];
    const auto store = reports::Store::open(o.get("--db"), false, store_busy_timeout(o));
    auto runs = store.runs(filter);
    const auto rows = store.case_rows(id);
    const std::vector<reports::StoredRun> kept = runs_with_case(o, runs, rows, id);
    const auto fb = reports::find_first_bad(kept, rows);
    std::set<std::string> gpus;
    for (const auto& r : kept) gpus.insert(r.gpu);
    emit(o, format == "json" ? first_bad_json(id, kept, gpus, fb) : first_bad_text(id, kept, gpus, fb));
    return fb.first_bad ? kFailed : kOk;
  });
}

int merge(const std::vector<std::string>& args) {
  Options o("report merge", "FILE... -o OUT [--allow-mixed]",
            "Joins the results.json files of one run's shards (ipcheck run --shard K/N) into one\n"
            "run: the cases in catalog order, counts and clause coverage judged again over all of\n"
            "them, the expectations' matches summed, each case's audit unchanged; run.options.merged\n"
            "lists the shards and says whether all of them are there. The merged file diffs like a\n"
            "single run, and merging is associative (merged files merge again).\n"
            "Refuses (exit 2) inputs of different adapters, drivers, ipcheck versions, catalogs, GPU\n"
            "models, audit methods or run options unless --allow-mixed, and always a case that is in\n"
            "two inputs.");
  o.positional("FILE", "results.json files, one per shard", true)
      .flag("--allow-mixed", "merge inputs that differ in adapter, driver, ipcheck, catalog, devices or options");
  add_output(o);
  return guarded("report merge", [&] {
    if (!o.parse(args)) return kOk;
    std::vector<reports::MergeInput> inputs;
    for (const auto& p : o.positionals()) inputs.push_back({p, load(p)});
    reports::MergeOptions mo;
    mo.allow_mixed = o.has("--allow-mixed");
    // The one judge of coverage, over the catalog the inputs were run with.
    mo.coverage = [](reports::Results& r) { verdict::fill_clause_coverage(r, r.clauses); };
    const reports::Merged m = reports::merge_results(inputs, mo);
    for (const auto& n : m.notes)
      std::fprintf(stderr, "ipcheck report merge: note: %s\n", reports::terminal_text(n).c_str());
    emit(o, reports::dump_json(reports::to_json(m.results), 2) + "\n");
    const auto& s = m.results.summary;
    std::fprintf(stderr, "ipcheck report merge: %zu files, %d cases, %d unexpected%s\n", inputs.size(), s.total,
                 s.unexpected, m.results.run.options["merged"].value("complete", false) ? "; every shard is here" : "");
    return kOk;
  });
}

int baseline(const std::vector<std::string>& args) {
  Options o("report baseline", "FILE -o OUT",
            "Writes FILE without what changes on every run (start time, durations, pids,\n"
            "addresses in output, the host, the runner's descriptors, -j): the form committed\n"
            "under reports/baselines/ (see its README for the one-line refresh).");
  o.positional("FILE", "a results.json written by ipcheck run");
  add_output(o);
  return guarded("report baseline", [&] {
    if (!o.parse(args)) return kOk;
    const reports::Results r = reports::stable_copy(load(o.positionals()[0]));
    emit(o, reports::dump_json(reports::to_json(r), 2) + "\n");
    return kOk;
  });
}

int compare(const std::vector<std::string>& args) {
  Options o("report compare", "A B [--all] [--format text|md|json] [-o OUT]",
            "Two adapters' runs of the catalog side by side, for example cuda and ur on one\n"
            "machine: every case and clause with both verdicts, those that differ first-class,\n"
            "and which layer decided each side (the runtime's call and its native code, the\n"
            "adapter's own code, or ipcheck). A clause that passes through one layer and fails\n"
            "through the other is a finding about the layer in between. Judges nothing: exit 0,\n"
            "or 2 for a bad command line or a file that cannot be read.");
  o.positional("A", "a results.json (say, the driver's own API: cuda)")
      .positional("B", "a results.json of the same catalog through another adapter (say, ur)")
      .flag("--all", "list every case and clause, not only those that differ")
      .value("--format", "FORMAT", "text, md or json", "text");
  add_output(o);
  return guarded("report compare", [&] {
    if (!o.parse(args)) return kOk;
    const std::string format = format_of(o, {"text", "md", "json"});
    const auto& p = o.positionals();
    const reports::Comparison c = reports::compare_results(load(p[0]), load(p[1]), p[0], p[1]);
    const bool all = o.has("--all");
    emit(o, format == "text" ? reports::render_compare_text(c, all)
            : format == "md" ? reports::render_compare_markdown(c, all)
                             : reports::dump_json(reports::compare_to_json(c), 2) + "\n");
    return kOk;
  });
}

const std::pair<const char*, const char*> kSubcommands[] = {
    {"render", "a results.json as Markdown, HTML or JUnit XML"},
    {"diff", "two runs compared; exit 1 when a case regressed or failed anew"},
    {"compare", "two adapters' runs side by side, with the layer that decided each verdict"},
    {"history", "several runs side by side, one column per run (files, or a store: --db)"},
    {"first-bad", "the first driver version in a store where a case got worse"},
    {"merge", "the shards of one run joined into one results.json"},
    {"baseline", "a results.json without its volatile fields, to commit"},
};

int report(const std::vector<std::string>& args) {
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    std::printf("usage: ipcheck report <subcommand> [options]      ipcheck report <subcommand> --help\n\n"
                "Reads results.json files (schema ipcheck.results/2, reports/SCHEMA.md) or a results\n"
                "store (ipcheck store, reports/STORE.md).\n\nsubcommands:\n");
    for (const auto& [name, summary] : kSubcommands) std::printf("  %-10s %s\n", name, summary);
    return args.empty() ? kUsage : kOk;
  }
  const std::vector<std::string> rest(args.begin() + 1, args.end());
  if (args[0] == "render") return render(rest);
  if (args[0] == "diff") return diff(rest);
  if (args[0] == "history") return history(rest);
  if (args[0] == "compare") return compare(rest);
  if (args[0] == "first-bad") return first_bad(rest);
  if (args[0] == "merge") return merge(rest);
  if (args[0] == "baseline") return baseline(rest);
  std::fprintf(stderr,
               "ipcheck report: unknown subcommand '%s'; use render, diff, compare, history, first-bad, merge or baseline\n",
               args[0].c_str());
  return kUsage;
}

const CommandRegistration registered_report{{"report", "render, compare and summarise results.json files", report}};

}  // namespace
}  // namespace ipcheck::cli
