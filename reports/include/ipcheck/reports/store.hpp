// The results store: many runs (GPU models x driver builds, every night) in one SQLite file
// or one PostgreSQL database (store_backend.hpp: the SQL of each behind one interface),
// to ask questions across them: the matrix of cases against driver versions
// (`ipcheck report history --db`), the first driver version where a case got worse
// (`ipcheck report first-bad`). Each run is kept whole (its results.json, compressed), so
// any report can be made again; one row per case makes history and first-bad fast.
// reports/STORE.md documents the schema, its versions and how they migrate.
#pragma once

#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "ipcheck/reports/results.hpp"

namespace ipcheck::reports {

class StoreBackend;

// The schema version of a store this ipcheck writes (SQLite: PRAGMA user_version;
// PostgreSQL: meta.schema_version); older ones are migrated on opening.
inline constexpr int kStoreSchemaVersion = 2;
// SQLite's PRAGMA application_id (PostgreSQL: meta.application_id): "ipck", so that another
// database is never taken for a store.
inline constexpr int kStoreApplicationId = 0x6970636b;

// A store that cannot be opened, read or written, or a file that is not one; the message
// names the store (a PostgreSQL URI without its password) and the fix.
class StoreError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Which backend a --db value names: postgresql://..., postgres://... or postgresql: (the
// PG* environment variables) is PostgreSQL; anything else is an SQLite file's path.
bool is_postgresql_store(const std::string& db);
// A --db value as it may be shown: a PostgreSQL URI's password (user:PASSWORD@, up to the
// last '@'; any parameter whose keyword, percent-decoded, libpq keeps secret: password=,
// %70assword=, sslpassword=) and every secret value libpq's own parser (PQconninfoParse)
// finds replaced by ***; a path as it is.
std::string redact_store_name(const std::string& db);
// The same for any libpq connection string: a URI or the keyword form (password='a b').
std::string redact_conninfo(const std::string& conninfo);
// Whether this ipcheck was built with libpq (the PostgreSQL backend).
bool postgresql_store_available();

// One stored run, as `ipcheck store ls` lists it.
struct StoredRun {
  long long id = 0;
  std::string digest;  // SHA-256 of the run's canonical JSON: its key
  std::string label;   // the path it was added from
  std::string adapter, driver_name, driver_version, gpu, hostname, kernel, ipcheck_version, start, added_at;
  double duration_s = 0;
  int total = 0, unexpected = 0;
  long long json_bytes = 0;    // the results.json (canonical, compact)
  long long stored_bytes = 0;  // as kept (zlib)
};

// Which runs a question is about; empty fields select everything.
struct RunFilter {
  std::string adapter;
  std::string gpu;  // a glob over the run's GPU models (device names joined by ", "); a bare word matches anywhere
  int last = 0;     // only the last N runs in the store's order (0: all)
};

// The content key of a run: SHA-256 over its JSON as this ipcheck writes it compactly
// (to_json(r).dump(): keys sorted, no spaces), so that the same run read from any file,
// re-indented or converted from an older schema, has one key; another run (another start
// time, host or outcome) has another.
std::string content_digest(const Results& r);

// The blob reader: a run kept in the store (`results`, `results_encoding`, `results_size`
// of its row) read back. Every field is checked before it is used (the size bounds the
// allocation, the JSON's depth is bounded); a bad one is a StoreError naming `where` and the field.
Results results_from_blob(const std::string& blob, const std::string& encoding, long long size,
                          const std::string& where);

// The GPU models of a run: the distinct device names, in order, joined by ", ".
std::string gpu_of(const RunInfo& run);

class Store;
// `ipcheck store copy`: every run of `from` added to `to` byte for byte (its blob, digest,
// label and added_at kept), in `from`'s order, each in its own transaction; a run already in
// `to` (by digest) is counted, not added again.
struct CopyCount {
  std::size_t copied = 0, already = 0;
};
CopyCount copy_runs(const Store& from, Store& to);

class Store {
 public:
  // How long a store waits for another writer's lock before it reports the store busy.
  static constexpr double kDefaultBusyTimeoutS = 30;
  // Opens (and with `create`, creates) the store at `path`, migrating an older schema.
  // `path` is an SQLite file (it must name a file: "" or a folder is a StoreError) or a
  // PostgreSQL database (is_postgresql_store; the tables live in its current schema, and a
  // schema holding other tables is refused). Creation and every migration run in one
  // exclusive transaction (PostgreSQL: one holding an advisory lock) that first reads the
  // version again, so writers that open one store side by side create or migrate it once and
  // the others see the result. A lock held longer than `busy_timeout_s` is a StoreError
  // saying the store is busy (PostgreSQL: the session's lock_timeout).
  static Store open(const std::string& path, bool create, double busy_timeout_s = kDefaultBusyTimeoutS);
  // The same, migrating no further than `schema_version`: makes the stores of older ipchecks
  // that the migration tests start from.
  static Store open(const std::string& path, bool create, int schema_version,
                    double busy_timeout_s = kDefaultBusyTimeoutS);
  Store(Store&& other) noexcept;
  Store& operator=(Store&&) = delete;
  ~Store();

  struct Added {
    long long id = 0;
    bool fresh = false;  // false: the same run was already there (nothing changed)
    std::string digest;
  };
  // Adds a run unless the same run (by content_digest) is there already: one transaction,
  // safe against concurrent adds of the same run (the digest is unique; on PostgreSQL an
  // insert that loses the race finds the winner's run, and a serialization failure or
  // deadlock is retried).
  Added add(const Results& r, const std::string& label);

  // Runs in the store's order: driver version (compare_versions), then start, then id.
  std::vector<StoredRun> runs(const RunFilter& f = {}) const;
  // A stored run's results, as they were added.
  Results load(long long id) const;

  struct CaseRow {
    long long run = 0;
    Status status = Status::pass;
    std::string reason;
    int attempts = 1;
  };
  // The case's row in each run that has it (run ids as `runs` gives them).
  std::vector<CaseRow> case_rows(const std::string& case_id) const;

  int schema_version() const;
  // The store as it may be shown: the SQLite path, or the PostgreSQL URI without its password.
  const std::string& path() const { return path_; }
  // "sqlite" or "postgresql".
  const char* backend() const;

 private:
  friend CopyCount copy_runs(const Store& from, Store& to);
  Store(std::unique_ptr<StoreBackend> b, std::string path);
  std::unique_ptr<StoreBackend> b_;
  std::string path_;
};

// ---- first-bad: the first driver version where a case got worse

// A case's verdict on one driver version, over every run of that version.
struct VersionVerdict {
  std::string version;
  std::optional<Status> status;      // the worst judged status (pass to crash); nullopt: none judged it
  std::string reason;                // of the run that gave `status`
  std::vector<std::string> runs;     // labels of the runs of this version that have the case
  std::vector<Status> unjudged;      // skip, error, incomplete, flaky seen on this version
};

struct FirstBad {
  std::vector<VersionVerdict> versions;  // oldest first
  std::optional<std::size_t> first_bad;  // index into versions
  std::optional<std::size_t> last_good;  // the judged version just before it
};

// Versions in dotted-number order; on each, the worst judged status over its runs. The first
// version whose status is worse (reports::severity) than that of the judged version before it
// is the first bad one, and that version the last good one. skip, error, incomplete and
// flaky judge nothing: such a version is passed over (and listed with what it saw).
FirstBad find_first_bad(const std::vector<StoredRun>& runs, const std::vector<Store::CaseRow>& rows);

}  // namespace ipcheck::reports
