// `ipcheck store`: a results store, one SQLite file or one PostgreSQL database holding many
// runs (GPU models x driver builds), for `ipcheck report history --db` and
// `ipcheck report first-bad`; `store copy` moves runs between stores of either kind.
#include <cstdio>
#include <iostream>

#include "ipcheck/cli.hpp"
#include "ipcheck/reports/render.hpp"
#include "ipcheck/reports/store.hpp"

namespace ipcheck::cli {
namespace {

std::string size_of(long long bytes) {
  char buf[32];
  if (bytes < 10 * 1024) std::snprintf(buf, sizeof buf, "%lld B", bytes);
  else if (bytes < 10 * 1024 * 1024) std::snprintf(buf, sizeof buf, "%.1f KiB", static_cast<double>(bytes) / 1024);
  else std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / (1024 * 1024));
  return buf;
}

constexpr const char* kStoreHelp =
    "the store: an SQLite file, or a PostgreSQL database (postgresql://USER@HOST/DB; postgresql: for the PG* "
    "environment)";

std::string db_of(const Options& o) {
  if (!o.has("--db"))
    throw UsageError("--db STORE is missing: the store to use, an SQLite file or postgresql://... (created by the "
                     "first 'store add')");
  return o.get("--db");
}

double busy_timeout_of(const Options& o) {
  return o.has("--busy-timeout") ? o.get_double("--busy-timeout", 0, 86400) : reports::Store::kDefaultBusyTimeoutS;
}

int fail(const char* sub, const std::exception& e) {
  std::fprintf(stderr, "ipcheck store %s: %s\n", sub, reports::terminal_text(e.what()).c_str());
  return kUsage;
}

int add(const std::vector<std::string>& args) {
  Options o("store add", "RESULTS.json... --db STORE",
            "Adds runs to a results store (created when missing). A run already there (the same\n"
            "content: SHA-256 of its canonical JSON) is kept once: adding it again changes nothing.\n"
            "Each run is kept whole (its results.json, compressed) with one row per case.");
  o.positional("RESULTS.json", "results.json files (a run, or shards merged with 'ipcheck report merge')", true)
      .value("--db", "STORE", kStoreHelp)
      .value("--busy-timeout", "S", "seconds to wait while another process writes the store", "30");
  return run_command("store add", [&] {
    if (!o.parse(args)) return kOk;
    const std::string db = db_of(o);
    try {
      auto store = reports::Store::open(db, true, busy_timeout_of(o));
      for (const auto& p : o.positionals()) {
        const reports::Results r = reports::read_results(p);
        const auto a = store.add(r, p);
        const auto t = [](const std::string& x) { return reports::terminal_text(x); };
        std::printf("%s run %lld (%s): %s %s %s, %d cases, started %s: %s\n", a.fresh ? "added" : "already stored as",
                    a.id, a.digest.substr(0, 12).c_str(), t(r.run.adapter).c_str(), t(r.run.driver_name).c_str(),
                    t(r.run.driver_version).c_str(), r.summary.total, t(r.run.start).c_str(), t(p).c_str());
      }
    } catch (const reports::SchemaError& e) {
      return fail("add", e);
    } catch (const reports::StoreError& e) {
      return fail("add", e);
    }
    return kOk;
  });
}

int ls(const std::vector<std::string>& args) {
  Options o("store ls", "--db STORE [--adapter A] [--gpu G] [--format text|json]",
            "Lists the runs of a results store in its order: adapter, driver, driver version\n"
            "(dotted numbers), start.");
  o.value("--db", "STORE", kStoreHelp)
      .value("--busy-timeout", "S", "seconds to wait while another process writes the store", "30")
      .value("--adapter", "NAME", "only runs of this adapter")
      .value("--gpu", "GLOB", "only runs on these GPU models (a bare word matches anywhere)")
      .value("--format", "FORMAT", "text or json", "text");
  return run_command("store ls", [&] {
    if (!o.parse(args)) return kOk;
    const std::string db = db_of(o);
    const std::string format = o.get("--format");
    if (format != "text" && format != "json") throw UsageError("--format is '" + format + "'; use text or json");
    try {
      const auto store = reports::Store::open(db, false, busy_timeout_of(o));
      reports::RunFilter f;
      f.adapter = o.get("--adapter");
      f.gpu = o.get("--gpu");
      const auto runs = store.runs(f);
      if (format == "json") {
        nlohmann::json a = nlohmann::json::array();
        for (const auto& r : runs)
          a.push_back({{"id", r.id},           {"digest", r.digest},         {"label", r.label},
                       {"adapter", r.adapter}, {"driver", {{"name", r.driver_name}, {"version", r.driver_version}}},
                       {"gpu", r.gpu},         {"hostname", r.hostname},     {"ipcheck_version", r.ipcheck_version},
                       {"start", r.start},     {"duration_s", r.duration_s}, {"total", r.total},
                       {"unexpected", r.unexpected}, {"added_at", r.added_at}, {"json_bytes", r.json_bytes},
                       {"stored_bytes", r.stored_bytes}});
        std::cout << nlohmann::json{{"db", store.path()}, {"backend", store.backend()}, {"schema_version", store.schema_version()}, {"runs", a}}.dump(2) << "\n";
        return kOk;
      }
      long long stored = 0;
      for (const auto& r : runs) stored += r.stored_bytes;
      std::printf("%s: %zu run%s (store schema %d), %s of results kept\n", reports::terminal_text(store.path()).c_str(), runs.size(),
                  runs.size() == 1 ? "" : "s", store.schema_version(), size_of(stored).c_str());
      if (runs.empty()) return kOk;
      std::printf("%5s  %-8s  %-34s  %-24s  %-20s  %5s  %5s  %9s  %s\n", "id", "adapter", "driver", "gpu", "start",
                  "cases", "unexp", "stored", "added from");
      const auto t = [](const std::string& x) { return reports::terminal_text(x); };
      for (const auto& r : runs)
        std::printf("%5lld  %-8s  %-34s  %-24s  %-20s  %5d  %5d  %9s  %s\n", r.id, t(r.adapter).c_str(),
                    t(r.driver_name + " " + r.driver_version).c_str(), t(r.gpu).c_str(), t(r.start).c_str(), r.total,
                    r.unexpected, size_of(r.stored_bytes).c_str(), t(r.label).c_str());
    } catch (const reports::StoreError& e) {
      return fail("ls", e);
    }
    return kOk;
  });
}

int copy(const std::vector<std::string>& args) {
  Options o("store copy", "--from STORE --to STORE",
            "Copies every run of one store into another (created when missing), either backend to\n"
            "either: an SQLite file or a PostgreSQL database. Each run keeps its label and when it was\n"
            "added; a run already in the target (the same content) is counted, not copied again, so\n"
            "copying twice changes nothing.");
  o.value("--from", "STORE", "the store to read (an SQLite file or postgresql://...)")
      .value("--to", "STORE", "the store to add to (an SQLite file or postgresql://...; created when missing)")
      .value("--busy-timeout", "S", "seconds to wait while another process writes either store", "30");
  return run_command("store copy", [&] {
    if (!o.parse(args)) return kOk;
    if (!o.has("--from") || !o.has("--to"))
      throw UsageError(std::string(o.has("--from") ? "--to" : "--from") +
                       " STORE is missing: store copy --from STORE --to STORE (an SQLite file or postgresql://...)");
    try {
      const auto from = reports::Store::open(o.get("--from"), false, busy_timeout_of(o));
      auto to = reports::Store::open(o.get("--to"), true, busy_timeout_of(o));
      const auto n = reports::copy_runs(from, to);
      const auto t = [](const std::string& x) { return reports::terminal_text(x); };
      std::printf("copied %zu run%s from %s to %s (%zu already there)\n", n.copied, n.copied == 1 ? "" : "s",
                  t(from.path()).c_str(), t(to.path()).c_str(), n.already);
    } catch (const reports::StoreError& e) {
      return fail("copy", e);
    }
    return kOk;
  });
}

int store(const std::vector<std::string>& args) {
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    std::printf("usage: ipcheck store <subcommand> --db STORE [options]      ipcheck store <subcommand> --help\n\n"
                "A results store: many runs in one SQLite file or one PostgreSQL database\n"
                "(--db postgresql://...; reports/STORE.md), read by 'ipcheck report history --db'\n"
                "and 'ipcheck report first-bad'.\n\nsubcommands:\n"
                "  add   runs (results.json files) into the store; a run already there is kept once\n"
                "  ls    the runs of the store\n"
                "  copy  every run of one store into another (--from STORE --to STORE)\n");
    return args.empty() ? kUsage : kOk;
  }
  const std::vector<std::string> rest(args.begin() + 1, args.end());
  if (args[0] == "add") return add(rest);
  if (args[0] == "ls") return ls(rest);
  if (args[0] == "copy") return copy(rest);
  std::fprintf(stderr, "ipcheck store: unknown subcommand '%s'; use add, ls or copy\n", args[0].c_str());
  return kUsage;
}

const CommandRegistration registered_store{{"store", "keep runs in a results store (SQLite or PostgreSQL) for history and first-bad", store}};

}  // namespace
}  // namespace ipcheck::cli
