// Renderings of a diff (diff.hpp): the text and Markdown of `ipcheck report diff`, each a
// DiffSectionWriter walked through the sections in one order, and its JSON. The diff itself
// is computed in diff.cpp.
#include <algorithm>
#include <map>
#include <set>

#include "ipcheck/reports/diff.hpp"
#include "text.hpp"

namespace ipcheck::reports {

using nlohmann::json;
using text::fmt;
using text::md;
using text::md_code;
using text::plural;

namespace {

std::string per_call(double v) { return fmt("%.3g", v); }

std::string driver(const RunLabel& r) { return text::driver_of(r.driver_name, r.driver_version); }

std::string change_pct(const BenchChange& b) {
  if (b.old_median == 0) return "new";
  return fmt("%+.1f%%", (b.new_median - b.old_median) / b.old_median * 100);
}

std::string bench_line(const BenchChange& b) {
  std::string s = text::number(b.old_median) + " " + b.unit + " -> " + text::number(b.new_median) + " " + b.unit +
                  " (" + change_pct(b) + ", " + (b.worse ? "worse" : "better") + "; spread " +
                  text::number(b.old_spread) + " / " + text::number(b.new_spread) + " " + b.unit + " over " +
                  std::to_string(b.old_repetitions) + " / " + std::to_string(b.new_repetitions) + " repetitions";
  if (b.old_ratio > 0 || b.new_ratio > 0)
    s += fmt("; %.2fx -> %.2fx the floor%s", b.old_ratio, b.new_ratio, b.ratio_moved ? ", beyond noise" : "");
  return s + ")";
}

std::string obs_value(const std::optional<std::string>& v) { return v ? *v : "(not observed)"; }

// One line for the whole diff's counts, regressions first.
std::string tally(const Diff& d) {
  if (d.empty()) return "no changes: the same cases with the same statuses, observations, benchmarks and call profiles";
  std::vector<std::string> parts;
  auto add = [&](std::size_t n, const char* one, const char* many) {
    if (n) parts.push_back(plural(n, one, many));
  };
  parts.push_back(plural(d.regressions.size(), "regression", "regressions"));
  add(d.new_failures.size() + d.new_clause_failures.size(), "new failure (did not run before)",
      "new failures (did not run before)");
  add(d.fixes.size(), "fix", "fixes");
  add(d.flaky.size(), "flaky case (passed on a rerun)", "flaky cases (passed on a rerun)");
  add(d.errors.size(), "case not judged (harness error)", "cases not judged (harness errors)");
  add(d.changes.size(), "other status change", "other status changes");
  add(d.added.size(), "new case", "new cases");
  add(d.removed.size(), "removed case", "removed cases");
  add(d.clauses.size(), "coverage change", "coverage changes");
  add(d.observations.size(), "observation change", "observation changes");
  add(d.bench.size(), "benchmark change beyond noise", "benchmark changes beyond noise");
  add(d.profiles.size(), "call profile change", "call profile changes");
  std::string s;
  for (const auto& p : parts) s += (s.empty() ? "" : ", ") + p;
  return s;
}

std::string headline(const Diff& d) {
  const auto& o = d.old_run;
  const auto& n = d.new_run;
  std::string s = o.adapter == n.adapter ? n.adapter : "adapter " + o.adapter + " -> " + n.adapter;
  if (d.driver_changed())
    s += ": " + driver(o) + " -> " + driver(n) + " (driver " +
         (o.driver_name != n.driver_name ? "changed" : "version changed") + ")";
  else
    s += ": " + driver(n) + " (the same driver in both runs)";
  return s;
}

}  // namespace

namespace {

// The status-change and case-entry lists of a diff, as a rendering names its sections.
enum class DiffChangeList { regressions, fixes, errors, other };
enum class DiffEntryList { added, removed };

// One rendering of a diff, section by section, into `s_`: walk_diff_sections calls the
// sections in the order every rendering shows them, so the text and the Markdown agree.
class DiffSectionWriter {
 public:
  explicit DiffSectionWriter(std::string& s) : s_(s) {}
  virtual ~DiffSectionWriter() = default;
  virtual void changes(DiffChangeList which, const std::vector<StatusChange>& list) = 0;
  virtual void new_failures(const Diff& d) = 0;  // cases and clauses that did not run before and fail now
  virtual void flaky(const std::vector<FlakyCase>& list) = 0;
  virtual void entries(DiffEntryList which, const std::vector<CaseEntry>& list) = 0;
  virtual void clauses(const std::vector<ClauseChange>& list) = 0;
  virtual void observations(const std::vector<ObservationChange>& list) = 0;
  virtual void bench(const Diff& d) = 0;     // the changes beyond noise, and what a rendering says there of the rest
  virtual void fuzz(const FuzzDiff& f) = 0;
  virtual void profiles(const Diff& d) = 0;  // the changes, and what a rendering says there of why none were compared

 protected:
  std::string& s_;
};

void walk_diff_sections(const Diff& d, DiffSectionWriter& w) {
  w.changes(DiffChangeList::regressions, d.regressions);
  w.new_failures(d);
  w.changes(DiffChangeList::fixes, d.fixes);
  w.changes(DiffChangeList::errors, d.errors);
  w.flaky(d.flaky);
  w.changes(DiffChangeList::other, d.changes);
  w.entries(DiffEntryList::added, d.added);
  w.entries(DiffEntryList::removed, d.removed);
  w.clauses(d.clauses);
  w.observations(d.observations);
  w.bench(d);
  w.fuzz(d.fuzz);
  w.profiles(d);
}

// Plain text, columns padded: ids to the widest id, statuses to the widest "from -> to".
class TextDiffWriter final : public DiffSectionWriter {
 public:
  TextDiffWriter(std::string& s, const Diff& d) : DiffSectionWriter(s) {
    for (const auto* list : {&d.regressions, &d.fixes, &d.changes})
      for (const auto& c : *list) {
        w_ = std::max(w_, text::width(c.id));
        sw_ = std::max(sw_, std::string(to_string(c.from)).size() + 4 + std::string(to_string(c.to)).size());
      }
    for (const auto& f : d.new_failures) {
      w_ = std::max(w_, text::width(f.id));
      sw_ = std::max(sw_, std::string(f.from ? to_string(*f.from) : "absent").size() + 4 + std::string(to_string(f.to)).size());
    }
    for (const auto* list : {&d.added, &d.removed})
      for (const auto& c : *list) {
        w_ = std::max(w_, text::width(c.id));
        sw_ = std::max(sw_, std::string(to_string(c.status)).size() + 4);
      }
  }

  void changes(DiffChangeList which, const std::vector<StatusChange>& list) override {
    static constexpr const char* kTitles[] = {
        "regressions", "fixes", "not judged in the new run: harness errors (never a regression; see each reason)",
        "other status changes, to or from skip, incomplete or error (never a regression)"};
    if (list.empty()) return;
    s_ += fmt("\n%s (%zu)\n", kTitles[static_cast<int>(which)], list.size());
    for (const auto& c : list) {
      const std::string arrow = std::string(to_string(c.from)) + " -> " + to_string(c.to);
      s_ += "  " + text::pad(c.id, w_) + "  " + text::pad(arrow, sw_);
      s_ = text::trim_end(s_ + "  " + c.reason) + "\n";
    }
  }

  void new_failures(const Diff& d) override {
    const std::size_t n = d.new_failures.size() + d.new_clause_failures.size();
    if (!n) return;
    s_ += fmt("\nnew failures: did not run (or judged nothing) in the old run, fail now (%zu; they fail the gate)\n", n);
    for (const auto& f : d.new_failures) {
      const std::string arrow = std::string(f.from ? to_string(*f.from) : "absent") + " -> " + to_string(f.to);
      s_ += "  " + text::pad(f.id, w_) + "  " + text::pad(arrow, sw_);
      s_ = text::trim_end(s_ + "  " + f.reason) + "\n";
    }
    for (const auto& c : d.new_clause_failures)
      s_ += "  clause " + c.id + "  " + to_string(c.from) + " -> " + to_string(c.to) + "\n";
  }

  void flaky(const std::vector<FlakyCase>& list) override {
    if (list.empty()) return;
    s_ += fmt("\nflaky in the new run: did not pass, then passed on a rerun (%zu; never a regression)\n", list.size());
    for (const auto& f : list) {
      const std::string was = f.old_status ? std::string("was ") + to_string(*f.old_status) : "new case";
      s_ += "  " + text::pad(f.id, w_) + "  " + text::pad(was, sw_);
      s_ = text::trim_end(s_ + "  " + (f.expected ? "(expected) " : "") + f.reason) + "\n";
    }
  }

  void entries(DiffEntryList which, const std::vector<CaseEntry>& list) override {
    const bool removed = which == DiffEntryList::removed;
    if (list.empty()) return;
    s_ += fmt("\n%s (%zu)\n", removed ? "removed cases" : "new cases", list.size());
    for (const auto& c : list) {
      s_ += "  " + text::pad(c.id, w_) + "  " + text::pad((removed ? "was " : "") + std::string(to_string(c.status)), sw_);
      s_ = text::trim_end(s_ + "  " + c.reason) + "\n";
    }
  }

  void clauses(const std::vector<ClauseChange>& list) override {
    if (list.empty()) return;
    std::size_t cw = 0;
    for (const auto& c : list) cw = std::max(cw, text::width(c.id));
    s_ += fmt("\nclause coverage changes (%zu)\n", list.size());
    for (const auto& c : list) s_ += "  " + text::pad(c.id, cw) + "  " + to_string(c.from) + " -> " + to_string(c.to) + "\n";
  }

  void observations(const std::vector<ObservationChange>& list) override {
    if (list.empty()) return;
    std::size_t ow = 0;
    for (const auto& o : list) ow = std::max(ow, text::width(o.case_id));
    s_ += fmt("\nobservation changes (%zu)\n", list.size());
    for (const auto& o : list)
      s_ += "  " + text::pad(o.case_id, ow) + "  " + o.name + ": " + obs_value(o.from) + " -> " + obs_value(o.to) + "\n";
  }

  void bench(const Diff& d) override {
    if (d.bench.empty()) return;
    std::size_t bw = 0;
    for (const auto& b : d.bench) bw = std::max(bw, text::width(b.name));
    s_ += fmt("\nbenchmark changes beyond noise (%zu)\n", d.bench.size());
    for (const auto& b : d.bench) s_ += "  " + text::pad(b.name, bw) + "  " + bench_line(b) + "\n";
  }

  void fuzz(const FuzzDiff& f) override {
    if (!f.compared) return;
    s_ += fmt("\nfuzz campaign: %lld -> %lld executions\n", f.old_executions, f.new_executions);
    for (const auto& [k, o, n] : f.outcomes) s_ += fmt("  outcome %s: %lld -> %lld\n", k.c_str(), o, n);
    for (const auto& c : f.classes_new) s_ += "  new finding class: " + c + "\n";
    for (const auto& c : f.classes_gone) s_ += "  finding class gone: " + c + "\n";
  }

  void profiles(const Diff& d) override {
    if (d.profiles.empty()) return;
    s_ += fmt("\ncall profile changes, per call (%zu)\n", d.profiles.size());
    for (const auto& c : d.profiles)
      s_ += "  " + c.case_id + "  " + c.role + "  " + c.verb + ": " + c.counter + " " + per_call(c.from) + " -> " +
            per_call(c.to) + fmt("  (%lld -> %lld calls)\n", c.old_calls, c.new_calls);
  }

 private:
  std::size_t w_ = 0, sw_ = 0;
};

// What the text says last, on one line: what was not compared or judged, and how.
std::vector<std::string> diff_text_notes(const Diff& d) {
  std::vector<std::string> notes;
  if (!d.profile_note.empty()) notes.push_back(d.profile_note);
  if (d.bench_within_noise) notes.push_back(plural(d.bench_within_noise, "benchmark", "benchmarks") + " within noise");
  if (!d.bench_unjudged.empty())
    notes.push_back(plural(d.bench_unjudged.size(), "benchmark", "benchmarks") +
                    " not judged (fewer than 2 repetitions in a run)");
  if (!d.bench_added.empty()) notes.push_back(plural(d.bench_added.size(), "new benchmark", "new benchmarks"));
  if (!d.bench_removed.empty())
    notes.push_back(plural(d.bench_removed.size(), "removed benchmark", "removed benchmarks"));
  if (!d.bench_note.empty()) notes.push_back(d.bench_note);
  if (!d.fuzz.note.empty()) notes.push_back(d.fuzz.note);
  if (d.bench_across_machines)
    notes.push_back(fmt("benchmarks compared across machines: ratios to their in-run floors only, noise %.1fx", kCrossMachineFactor));
  if (!d.bench_no_floor.empty())
    notes.push_back(plural(d.bench_no_floor.size(), "benchmark", "benchmarks") + " without a floor not compared across machines");
  return notes;
}

// Markdown: a table per section.
class MarkdownDiffWriter final : public DiffSectionWriter {
 public:
  using DiffSectionWriter::DiffSectionWriter;

  void changes(DiffChangeList which, const std::vector<StatusChange>& list) override {
    static constexpr const char* kTitles[] = {"Regressions", "Fixes", "Not judged in the new run (harness errors)",
                                              "Other status changes"};
    if (list.empty()) return;
    s_ += fmt("\n### %s (%zu)\n\n| case | old | new | reason |\n|---|---|---|---|\n", kTitles[static_cast<int>(which)],
              list.size());
    for (const auto& c : list)
      s_ += "| " + md_code(c.id) + " | " + to_string(c.from) + " | **" + to_string(c.to) + "** | " + md(c.reason) + " |\n";
  }

  void new_failures(const Diff& d) override {
    const std::size_t n = d.new_failures.size() + d.new_clause_failures.size();
    if (!n) return;
    s_ += fmt("\n### New failures: did not run before, fail now (%zu; they fail the gate)\n\n| case or clause | old | new | reason |\n"
              "|---|---|---|---|\n",
              n);
    for (const auto& f : d.new_failures)
      s_ += "| " + md_code(f.id) + " | " + (f.from ? to_string(*f.from) : "(absent)") + " | **" + to_string(f.to) + "** | " +
            md(f.reason) + " |\n";
    for (const auto& c : d.new_clause_failures)
      s_ += "| clause " + md_code(c.id) + " | " + to_string(c.from) + " | **" + to_string(c.to) + "** | |\n";
  }

  void flaky(const std::vector<FlakyCase>& list) override {
    if (list.empty()) return;
    s_ += fmt("\n### Flaky in the new run: passed on a rerun (%zu, never a regression)\n\n| case | old | expected | reason |\n"
              "|---|---|---|---|\n",
              list.size());
    for (const auto& f : list)
      s_ += "| " + md_code(f.id) + " | " + (f.old_status ? to_string(*f.old_status) : "(new)") + " | " +
            (f.expected ? "yes" : "no") + " | " + md(f.reason) + " |\n";
  }

  void entries(DiffEntryList which, const std::vector<CaseEntry>& list) override {
    if (list.empty()) return;
    s_ += fmt("\n### %s (%zu)\n\n| case | status | reason |\n|---|---|---|\n",
              which == DiffEntryList::removed ? "Removed cases" : "New cases", list.size());
    for (const auto& c : list) s_ += "| " + md_code(c.id) + " | " + to_string(c.status) + " | " + md(c.reason) + " |\n";
  }

  void clauses(const std::vector<ClauseChange>& list) override {
    if (list.empty()) return;
    s_ += fmt("\n### Clause coverage changes (%zu)\n\n| clause | old | new |\n|---|---|---|\n", list.size());
    for (const auto& c : list) s_ += "| " + md_code(c.id) + " | " + to_string(c.from) + " | " + to_string(c.to) + " |\n";
  }

  void observations(const std::vector<ObservationChange>& list) override {
    if (list.empty()) return;
    s_ += fmt("\n### Observation changes (%zu)\n\n| case | observation | old | new |\n|---|---|---|---|\n", list.size());
    for (const auto& o : list)
      s_ += "| " + md_code(o.case_id) + " | " + md_code(o.name) + " | " + md(obs_value(o.from)) + " | " +
            md(obs_value(o.to)) + " |\n";
  }

  void bench(const Diff& d) override {
    bench_changes(d.bench);
    if (d.bench_within_noise || !d.bench_unjudged.empty() || !d.bench_added.empty() || !d.bench_removed.empty())
      s_ += fmt("\nBenchmarks within noise: %d; not judged (fewer than 2 repetitions): %zu; new: %zu; removed: %zu.\n",
                d.bench_within_noise, d.bench_unjudged.size(), d.bench_added.size(), d.bench_removed.size());
    if (!d.bench_note.empty()) s_ += "\n" + md(d.bench_note) + ".\n";
    if (d.bench_across_machines)
      s_ += fmt("\nThe runs come from different machines: benchmarks compared as ratios to their in-run floors only "
                "(beyond noise: moved by more than %.1fx); %zu without a floor not compared.\n",
                kCrossMachineFactor, d.bench_no_floor.size());
  }

  void fuzz(const FuzzDiff& f) override {
    if (!f.compared) {
      if (!f.note.empty()) s_ += "\n" + md(f.note) + ".\n";
      return;
    }
    s_ += fmt("\n### Fuzz campaign\n\nExecutions: %lld -> %lld.\n", f.old_executions, f.new_executions);
    if (!f.outcomes.empty()) {
      s_ += "\n| outcome | old | new |\n|---|---|---|\n";
      for (const auto& [k, o, n] : f.outcomes) s_ += "| " + md_code(k) + fmt(" | %lld | %lld |\n", o, n);
    }
    for (const auto& c : f.classes_new) s_ += "\n- new finding class: " + md(c);
    for (const auto& c : f.classes_gone) s_ += "\n- finding class gone: " + md(c);
    if (!f.classes_new.empty() || !f.classes_gone.empty()) s_ += "\n";
  }

  void profiles(const Diff& d) override {
    if (!d.profiles.empty()) {
      s_ += fmt("\n### Call profile changes, per call (%zu)\n\n| case | role | verb | counter | old | new |\n"
                "|---|---|---|---|---|---|\n",
                d.profiles.size());
      for (const auto& c : d.profiles)
        s_ += "| " + md_code(c.case_id) + " | " + md(c.role) + " | " + md_code(c.verb) + " | " + md_code(c.counter) +
              " | " + per_call(c.from) + " | " + per_call(c.to) + " |\n";
    }
    if (!d.profile_note.empty()) s_ += "\n" + md(d.profile_note) + ".\n";
  }

 private:
  void bench_changes(const std::vector<BenchChange>& list) {
    if (list.empty()) return;
    s_ += fmt("\n### Benchmark changes beyond noise (%zu)\n\n| benchmark | old median | new median | change | spread old / new | repetitions |\n"
              "|---|---|---|---|---|---|\n",
              list.size());
    for (const auto& b : list)
      s_ += "| " + md_code(b.name) + " | " + text::number(b.old_median) + " " + b.unit + " | " +
            text::number(b.new_median) + " " + b.unit + " | " + change_pct(b) + (b.worse ? " worse" : " better") +
            (b.ratio_moved ? fmt(" (ratio %.2fx -> %.2fx, beyond noise)", b.old_ratio, b.new_ratio) : std::string()) +
            " | " + text::number(b.old_spread) + " / " + text::number(b.new_spread) + " | " +
            std::to_string(b.old_repetitions) + " / " + std::to_string(b.new_repetitions) + " |\n";
  }
};

}  // namespace

std::string render_diff_text(const Diff& d) {
  std::string s = "ipcheck report diff: " + headline(d) + "\n";
  for (const RunLabel* r : {&d.old_run, &d.new_run}) {
    s += (r == &d.old_run ? "  old  " : "  new  ") + r->label + "  " + driver(*r) + "  ipcheck " +
         (r->ipcheck_version.empty() ? "?" : r->ipcheck_version) + "  started " + (r->start.empty() ? "?" : r->start) +
         "  " + plural(r->total, "case", "cases") + ", " + std::to_string(r->unexpected) + " unexpected\n";
  }
  s += "result: " + tally(d) + "\n";
  TextDiffWriter sections(s, d);
  walk_diff_sections(d, sections);
  const std::vector<std::string> notes = diff_text_notes(d);
  if (!notes.empty()) {
    std::string line;
    for (const auto& n : notes) line += (line.empty() ? "" : "; ") + n;
    s += "\n" + line + "\n";
  }
  return text::plain(s);  // the terminal's one escaping: control bytes shown, never sent
}

std::string render_diff_markdown(const Diff& d) {
  std::string s = "## ipcheck diff: " + md(headline(d)) + "\n\n";
  s += "| | old | new |\n|---|---|---|\n";
  s += "| file | " + md_code(d.old_run.label) + " | " + md_code(d.new_run.label) + " |\n";
  s += "| driver | " + md(driver(d.old_run)) + " | " + md(driver(d.new_run)) + " |\n";
  s += "| ipcheck | " + md(d.old_run.ipcheck_version) + " | " + md(d.new_run.ipcheck_version) + " |\n";
  s += "| started | " + md(d.old_run.start) + " | " + md(d.new_run.start) + " |\n";
  s += fmt("| cases | %d (%d unexpected) | %d (%d unexpected) |\n\n", d.old_run.total, d.old_run.unexpected,
           d.new_run.total, d.new_run.unexpected);
  s += (d.has_regression() ? "**" + tally(d) + "**" : tally(d)) + "\n";
  MarkdownDiffWriter sections(s);
  walk_diff_sections(d, sections);
  return s;
}

json diff_to_json(const Diff& d) {
  auto run = [](const RunLabel& r) {
    return json{{"label", r.label},
                {"adapter", r.adapter},
                {"driver", {{"name", r.driver_name}, {"version", r.driver_version}}},
                {"ipcheck_version", r.ipcheck_version},
                {"start", r.start},
                {"total", r.total},
                {"unexpected", r.unexpected}};
  };
  auto changes = [](const std::vector<StatusChange>& list) {
    json a = json::array();
    for (const auto& c : list) a.push_back({{"id", c.id}, {"old", to_string(c.from)}, {"new", to_string(c.to)}, {"reason", c.reason}});
    return a;
  };
  auto entries = [](const std::vector<CaseEntry>& list) {
    json a = json::array();
    for (const auto& c : list) a.push_back({{"id", c.id}, {"status", to_string(c.status)}, {"reason", c.reason}});
    return a;
  };
  json new_failures = json::array();
  for (const auto& f : d.new_failures)
    new_failures.push_back({{"id", f.id}, {"old", f.from ? json(to_string(*f.from)) : json()}, {"new", to_string(f.to)},
                            {"reason", f.reason}});
  json new_clause_failures = json::array();
  for (const auto& c : d.new_clause_failures)
    new_clause_failures.push_back({{"id", c.id}, {"old", to_string(c.from)}, {"new", to_string(c.to)}});
  json flaky = json::array();
  for (const auto& f : d.flaky)
    flaky.push_back({{"id", f.id}, {"old", f.old_status ? json(to_string(*f.old_status)) : json()},
                     {"expected", f.expected}, {"reason", f.reason}});
  json clauses = json::array();
  for (const auto& c : d.clauses) clauses.push_back({{"id", c.id}, {"old", to_string(c.from)}, {"new", to_string(c.to)}});
  json obs = json::array();
  for (const auto& o : d.observations)
    obs.push_back({{"case", o.case_id}, {"name", o.name}, {"old", o.from ? json(*o.from) : json()},
                   {"new", o.to ? json(*o.to) : json()}});
  json bench = json::array();
  for (const auto& b : d.bench) {
    bench.push_back({{"name", b.name},
                     {"unit", b.unit},
                     {"old", {{"median", b.old_median}, {"spread", b.old_spread}, {"repetitions", b.old_repetitions}, {"ratio", b.old_ratio}}},
                     {"new", {{"median", b.new_median}, {"spread", b.new_spread}, {"repetitions", b.new_repetitions}, {"ratio", b.new_ratio}}},
                     {"worse", b.worse}});
    if (b.ratio_moved) bench.back()["ratio_beyond_noise"] = true;
  }
  json profiles = json::array();
  for (const auto& c : d.profiles)
    profiles.push_back({{"case", c.case_id}, {"role", c.role}, {"verb", c.verb}, {"counter", c.counter},
                        {"old_per_call", c.from}, {"new_per_call", c.to}, {"old_calls", c.old_calls},
                        {"new_calls", c.new_calls}});
  json fuzz_outcomes = json::array();
  for (const auto& [k, o, n] : d.fuzz.outcomes) fuzz_outcomes.push_back({{"outcome", k}, {"old", o}, {"new", n}});
  json fuzz = {{"compared", d.fuzz.compared},
               {"note", d.fuzz.note},
               {"old_executions", d.fuzz.old_executions},
               {"new_executions", d.fuzz.new_executions},
               {"outcome_changes", fuzz_outcomes},
               {"classes_new", d.fuzz.classes_new},
               {"classes_gone", d.fuzz.classes_gone}};
  return {{"schema", kDiffSchema},
          {"old", run(d.old_run)},
          {"new", run(d.new_run)},
          {"driver_changed", d.driver_changed()},
          {"regression", d.has_regression()},
          {"gate_failed", d.fails_gate()},
          {"regressions", changes(d.regressions)},
          {"new_failures", new_failures},
          {"new_clause_failures", new_clause_failures},
          {"fixes", changes(d.fixes)},
          {"status_changes", changes(d.changes)},
          {"errors", changes(d.errors)},
          {"flaky", flaky},
          {"clause_changes", clauses},
          {"new_cases", entries(d.added)},
          {"removed_cases", entries(d.removed)},
          {"observation_changes", obs},
          {"bench_changes", bench},
          {"bench_within_noise", d.bench_within_noise},
          {"bench_unjudged", d.bench_unjudged},
          {"bench_added", d.bench_added},
          {"bench_removed", d.bench_removed},
          {"bench_note", d.bench_note},
          {"bench_across_machines", d.bench_across_machines},
          {"bench_no_floor", d.bench_no_floor},
          {"fuzz", fuzz},
          {"profile_changes", profiles},
          {"profile_note", d.profile_note}};
}

}  // namespace ipcheck::reports
