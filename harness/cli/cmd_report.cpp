// `ipcheck report`: renders, compares and summarises results.json files (render, diff,
// history, baseline). Everything is computed from the files alone; nothing is run.
#include <cstdio>
#include <iostream>
#include <optional>
#include <stdexcept>

#include "ipcheck/cli.hpp"
#include "ipcheck/reports/diff.hpp"
#include "ipcheck/reports/files.hpp"
#include "ipcheck/reports/history.hpp"
#include "ipcheck/reports/render.hpp"
#include "ipcheck/reports/stable.hpp"

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

// Writes to -o OUT when given, else to standard output.
void emit(const Options& o, const std::string& content) {
  if (o.has("-o") && o.has("--output")) throw UsageError("-o and --output are the same option; give one");
  const std::string out = o.has("-o") ? o.get("-o") : o.get("--output");
  if (out.empty() || out == "-") {
    std::cout << content;
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
      std::fprintf(stderr, "ipcheck %s: %s\n", name.c_str(), e.what());
      return kUsage;
    }
  });
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
            "< timeout < crash), fixes, other status changes (to or from skip or incomplete, never\n"
            "a regression), new and removed cases, observation changes, and benchmark changes\n"
            "beyond the noise of both runs. Regressions come first, the worst first.\n"
            "Exit status: 1 when a case regressed, 0 otherwise, 2 for a bad command line or a\n"
            "file that cannot be read.");
  o.positional("OLD", "the baseline results.json").positional("NEW", "the results.json to judge")
      .value("--format", "FORMAT", "text, md or json", "text");
  add_output(o);
  return guarded("report diff", [&] {
    if (!o.parse(args)) return kOk;
    const std::string format = format_of(o, {"text", "md", "json"});
    const auto& p = o.positionals();
    const reports::Diff d = reports::diff_results(load(p[0]), load(p[1]), p[0], p[1]);
    emit(o, format == "text" ? reports::render_diff_text(d)
                             : format == "md" ? reports::render_diff_markdown(d) : reports::diff_to_json(d).dump(2) + "\n");
    return d.has_regression() ? kFailed : kOk;
  });
}

int history(const std::vector<std::string>& args) {
  Options o("report history", "FILE... [--format text|md|html] [--changed] [-o OUT]",
            "Summarises several runs side by side, one column per run in the order given\n"
            "(oldest first reads best): status counts, every case's status per run,\n"
            "observations and benchmark medians; html adds the per-version trend picture.");
  o.positional("FILE", "results.json files, one per run", true)
      .value("--format", "FORMAT", "text, md or html", "text")
      .flag("--changed", "only the cases whose status is not the same in every run");
  add_output(o);
  return guarded("report history", [&] {
    if (!o.parse(args)) return kOk;
    const std::string format = format_of(o, {"text", "md", "html"});
    std::vector<reports::HistoryRun> runs;
    for (const auto& p : o.positionals()) runs.push_back({p, load(p)});
    reports::HistoryOptions ho;
    ho.changed_only = o.has("--changed");
    emit(o, format == "text" ? reports::render_history_text(runs, ho)
                             : format == "md" ? reports::render_history_markdown(runs, ho)
                                              : reports::render_history_html(runs, ho));
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
    emit(o, reports::to_json(r).dump(2) + "\n");
    return kOk;
  });
}

const std::pair<const char*, const char*> kSubcommands[] = {
    {"render", "a results.json as Markdown, HTML or JUnit XML"},
    {"diff", "two runs compared; exit 1 when a case regressed"},
    {"history", "several runs side by side, one column per run"},
    {"baseline", "a results.json without its volatile fields, to commit"},
};

int report(const std::vector<std::string>& args) {
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    std::printf("usage: ipcheck report <subcommand> [options]      ipcheck report <subcommand> --help\n\n"
                "Reads results.json files (schema ipcheck.results/1, reports/SCHEMA.md).\n\nsubcommands:\n");
    for (const auto& [name, summary] : kSubcommands) std::printf("  %-9s %s\n", name, summary);
    return args.empty() ? kUsage : kOk;
  }
  const std::vector<std::string> rest(args.begin() + 1, args.end());
  if (args[0] == "render") return render(rest);
  if (args[0] == "diff") return diff(rest);
  if (args[0] == "history") return history(rest);
  if (args[0] == "baseline") return baseline(rest);
  std::fprintf(stderr, "ipcheck report: unknown subcommand '%s'; use render, diff, history or baseline\n", args[0].c_str());
  return kUsage;
}

const CommandRegistration reg{{"report", "render, compare and summarise results.json files", report}};

}  // namespace
}  // namespace ipcheck::cli
