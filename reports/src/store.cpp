#include "ipcheck/reports/store.hpp"

#include <fnmatch.h>
#include <sys/stat.h>
#include <sqlite3.h>
#include <zlib.h>

#include <algorithm>
#include <ctime>
#include <filesystem>
#include <map>
#include <tuple>

#include "ipcheck/reports/files.hpp"
#include "ipcheck/reports/version.hpp"
#include "sha256.hpp"

namespace ipcheck::reports {

using nlohmann::json;

std::string content_digest(const Results& r) { return sha256::hex(dump_json(to_json(r))); }

std::string gpu_of(const RunInfo& run) {
  std::vector<std::string> names;
  for (const auto& d : run.devices) {
    const std::string n = d.is_object() ? d.value("name", "") : "";
    if (!n.empty() && std::find(names.begin(), names.end(), n) == names.end()) names.push_back(n);
  }
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

namespace {

// What a failed SQLite call means for the person running ipcheck: a lock held too long is
// "busy" (never "not a database"), a file of another kind is not a store.
[[noreturn]] void sqlite_failed(sqlite3* db, int rc, const std::string& path, const std::string& doing = "") {
  const int code = rc & 0xff;
  if (code == SQLITE_BUSY || code == SQLITE_LOCKED)
    throw StoreError(path + ": the store is busy: another process held its lock for longer than the busy timeout; "
                            "try again, or wait longer with --busy-timeout S");
  if (code == SQLITE_NOTADB) throw StoreError(path + ": not an ipcheck results store (not an SQLite database)");
  throw StoreError(path + ": " + sqlite3_errmsg(db) + doing);
}

// One prepared statement, finalized when it goes.
class Statement {
 public:
  Statement(sqlite3* db, const std::string& sql, const std::string& path) : db_(db), path_(path) {
    const int rc = sqlite3_prepare_v2(db, sql.c_str(), -1, &s_, nullptr);
    if (rc != SQLITE_OK) sqlite_failed(db, rc, path, " (preparing: " + sql.substr(0, 60) + ")");
  }
  ~Statement() { sqlite3_finalize(s_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  Statement& bind(int i, const std::string& v) {
    sqlite3_bind_text(s_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
    return *this;
  }
  Statement& bind(int i, long long v) {
    sqlite3_bind_int64(s_, i, v);
    return *this;
  }
  Statement& bind(int i, double v) {
    sqlite3_bind_double(s_, i, v);
    return *this;
  }
  Statement& bind_blob(int i, const std::string& v) {
    sqlite3_bind_blob(s_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
    return *this;
  }
  // True while there is a row.
  bool step() {
    const int rc = sqlite3_step(s_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    sqlite_failed(db_, rc, path_);
  }
  std::string text(int i) const {
    const auto* p = sqlite3_column_text(s_, i);
    return p ? std::string(reinterpret_cast<const char*>(p), static_cast<std::size_t>(sqlite3_column_bytes(s_, i)))
             : std::string();
  }
  std::string blob(int i) const {
    const void* p = sqlite3_column_blob(s_, i);
    return p ? std::string(static_cast<const char*>(p), static_cast<std::size_t>(sqlite3_column_bytes(s_, i)))
             : std::string();
  }
  long long integer(int i) const { return sqlite3_column_int64(s_, i); }
  double real(int i) const { return sqlite3_column_double(s_, i); }

 private:
  sqlite3* db_;
  sqlite3_stmt* s_ = nullptr;
  std::string path_;
};

void exec(sqlite3* db, const std::string& sql, const std::string& path) {
  char* err = nullptr;
  const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err);
  if (rc != SQLITE_OK) {
    sqlite3_free(err);
    sqlite_failed(db, rc, path);
  }
}

long long pragma(sqlite3* db, const char* name, const std::string& path) {
  Statement s(db, std::string("PRAGMA ") + name, path);
  return s.step() ? s.integer(0) : 0;
}

std::string iso_now() {
  char buf[32];
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string compress(const std::string& in) {
  uLongf size = compressBound(static_cast<uLong>(in.size()));
  std::string out(size, '\0');
  if (compress2(reinterpret_cast<Bytef*>(out.data()), &size, reinterpret_cast<const Bytef*>(in.data()),
                static_cast<uLong>(in.size()), 9) != Z_OK)
    throw StoreError("zlib could not compress a run's results");
  out.resize(size);
  return out;
}

std::string decompress(const std::string& in, long long size, const std::string& where) {
  // The size comes from the store: bounded before it sizes an allocation.
  if (size < 0 || static_cast<unsigned long long>(size) > kMaxResultsBytes)
    throw StoreError(where + ": field results_size is " + std::to_string(size) + ", not a size from 0 to " +
                     std::to_string(kMaxResultsBytes) + " bytes (the store is damaged)");
  std::string out(static_cast<std::size_t>(size), '\0');
  uLongf got = static_cast<uLongf>(size);
  if (uncompress(reinterpret_cast<Bytef*>(out.data()), &got, reinterpret_cast<const Bytef*>(in.data()),
                 static_cast<uLong>(in.size())) != Z_OK ||
      got != static_cast<uLongf>(size))
    throw StoreError(where + ": the stored results do not decompress (the store is damaged)");
  return out;
}

// Version 1: runs kept whole (zlib), one row per case.
constexpr const char* kSchema1 = R"sql(
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE runs (
  id INTEGER PRIMARY KEY,
  digest TEXT NOT NULL UNIQUE,
  label TEXT NOT NULL,
  adapter TEXT NOT NULL,
  driver_name TEXT NOT NULL,
  driver_version TEXT NOT NULL,
  gpu TEXT NOT NULL,
  hostname TEXT NOT NULL,
  kernel TEXT NOT NULL,
  ipcheck_version TEXT NOT NULL,
  start TEXT NOT NULL,
  duration_s REAL NOT NULL,
  total INTEGER NOT NULL,
  unexpected INTEGER NOT NULL,
  added_at TEXT NOT NULL,
  results_encoding TEXT NOT NULL,
  results_size INTEGER NOT NULL,
  results BLOB NOT NULL
);
CREATE TABLE cases (
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  case_id TEXT NOT NULL,
  status TEXT NOT NULL,
  reason TEXT NOT NULL,
  PRIMARY KEY (run_id, case_id)
) WITHOUT ROWID;
CREATE INDEX cases_by_case ON cases(case_id, run_id);
)sql";

// Version 2: how many times each case ran (--rerun-failures) and what an expectation
// expected of it; runs found by adapter and driver.
constexpr const char* kSchema2 = R"sql(
ALTER TABLE cases ADD COLUMN attempts INTEGER NOT NULL DEFAULT 1;
ALTER TABLE cases ADD COLUMN expected_status TEXT NOT NULL DEFAULT '';
CREATE INDEX runs_by_driver ON runs(adapter, driver_name, driver_version);
)sql";

}  // namespace

Results results_from_blob(const std::string& blob, const std::string& encoding, long long size,
                          const std::string& where) {
  if (encoding != "zlib")
    throw StoreError(where + ": field results_encoding is '" + escape_invalid_utf8(encoding) +
                     "', not zlib (the store is damaged, or newer than this ipcheck)");
  const std::string text = decompress(blob, size, where);
  try {
    return from_json(parse_json_text(text, where, "stored run"));
  } catch (const std::exception& e) {
    throw StoreError(where + ": " + e.what());
  }
}

Store::Store(Store&& other) noexcept : db_(other.db_), path_(std::move(other.path_)) { other.db_ = nullptr; }

Store::~Store() {
  if (db_) sqlite3_close(db_);
}

int Store::schema_version() const { return static_cast<int>(pragma(db_, "user_version", path_)); }

Store Store::open(const std::string& path, bool create, double busy_timeout_s) {
  return open(path, create, kStoreSchemaVersion, busy_timeout_s);
}

namespace {

// --db must name a file: "" would make SQLite use a temporary database that vanishes (the
// run "added" nowhere), a folder or a FIFO is no store.
void check_store_path(const std::string& path) {
  if (path.empty())
    throw StoreError("--db is empty: name the store's file (an SQLite file, e.g. results.db; 'store add' creates it)");
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
    throw StoreError(path + ": " + (S_ISDIR(st.st_mode) ? "is a folder" : "is not a regular file") +
                     "; --db names the store's file (e.g. " + (S_ISDIR(st.st_mode) ? path + "/results.db" : "results.db") +
                     ")");
}

// The application id and schema version, checked: this is a store (or an empty file) that
// this ipcheck can read.
long long checked_version(sqlite3* raw, const std::string& path) {
  const long long app = pragma(raw, "application_id", path);
  const long long version = pragma(raw, "user_version", path);
  if (version == 0 && app == 0) {
    Statement t(raw, "SELECT count(*) FROM sqlite_master", path);
    if (t.step() && t.integer(0) > 0)
      throw StoreError(path + ": not an ipcheck results store (an SQLite database of something else)");
  } else if (app != kStoreApplicationId) {
    throw StoreError(path + ": not an ipcheck results store (SQLite application_id " + std::to_string(app) + ")");
  }
  if (version > kStoreSchemaVersion) {
    std::string writer = "a newer ipcheck";
    try {
      Statement m(raw, "SELECT value FROM meta WHERE key = 'written_by'", path);
      if (m.step()) writer = "ipcheck " + m.text(0);
    } catch (const StoreError&) {
    }
    throw StoreError(path + ": store schema " + std::to_string(version) + " is newer than this ipcheck's (" +
                     std::to_string(kStoreSchemaVersion) + "); it was last written by " + writer +
                     ": use that ipcheck or a newer one (reports/STORE.md lists the versions)");
  }
  return version;
}

// One step of the schema, inside the caller's transaction.
void migrate_to(sqlite3* raw, long long v, const std::string& path) {
  if (v == 1) {
    exec(raw, kSchema1, path);
    exec(raw, "PRAGMA application_id = " + std::to_string(kStoreApplicationId), path);
  }
  if (v == 2) {
    exec(raw, kSchema2, path);
    // Backfill from each run kept whole.
    std::vector<std::tuple<long long, std::string, std::string, long long>> blobs;
    {
      Statement q(raw, "SELECT id, results, results_encoding, results_size FROM runs", path);
      while (q.step()) blobs.emplace_back(q.integer(0), q.blob(1), q.text(2), q.integer(3));
    }
    for (const auto& [id, blob, encoding, size] : blobs) {
      const Results r = results_from_blob(blob, encoding, size, path + ": run " + std::to_string(id));
      for (const auto& c : r.cases) {
        Statement u(raw, "UPDATE cases SET attempts = ?, expected_status = ? WHERE run_id = ? AND case_id = ?", path);
        u.bind(1, static_cast<long long>(std::max<std::size_t>(1, c.attempts.size())))
            .bind(2, c.expected_status ? std::string(to_string(*c.expected_status)) : std::string())
            .bind(3, id)
            .bind(4, c.id);
        u.step();
      }
    }
  }
  exec(raw, "PRAGMA user_version = " + std::to_string(v), path);
}

}  // namespace

Store Store::open(const std::string& path, bool create, int target, double busy_timeout_s) {
  check_store_path(path);
  std::error_code ec;
  if (!create && !std::filesystem::exists(path, ec))
    throw StoreError(path + ": no store there; create one by adding a run: ipcheck store add RESULTS.json --db " + path);
  sqlite3* raw = nullptr;
  const int flags = SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0);
  if (sqlite3_open_v2(path.c_str(), &raw, flags, nullptr) != SQLITE_OK) {
    const std::string why = raw ? sqlite3_errmsg(raw) : "out of memory";
    sqlite3_close(raw);
    throw StoreError(path + ": cannot open the store (" + why + "); check the path and its permissions");
  }
  Store s(raw, path);
  // CI jobs of one fleet add runs side by side: a writer waits this long for another's lock.
  sqlite3_busy_timeout(raw, static_cast<int>(std::clamp(busy_timeout_s, 0.0, 86400.0) * 1000));
  exec(raw, "PRAGMA foreign_keys = ON", path);
  // The first look reads the application id, the version and the table count in one read
  // transaction: read one by one, another writer's creation could commit between them, and a
  // store half seen (tables, no version yet) would be taken for something else's database.
  long long seen = 0;
  exec(raw, "BEGIN", path);
  try {
    seen = checked_version(raw, path);
    exec(raw, "COMMIT", path);
  } catch (...) {
    sqlite3_exec(raw, "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
  if (seen >= target) return s;
  // Creation and migration: one exclusive transaction that reads the version again, so of
  // several writers opening a new store at once one creates it and the others find it made.
  exec(raw, "BEGIN EXCLUSIVE", path);
  try {
    for (long long v = checked_version(raw, path) + 1; v <= target; ++v) migrate_to(raw, v, path);
    exec(raw, "COMMIT", path);
  } catch (...) {
    sqlite3_exec(raw, "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
  return s;
}

Store::Added Store::add(const Results& r, const std::string& label) {
  const std::string text = dump_json(to_json(r));
  Added a;
  a.digest = sha256::hex(text);
  const int version = schema_version();
  exec(db_, "BEGIN IMMEDIATE", path_);
  try {
    {
      Statement q(db_, "SELECT id FROM runs WHERE digest = ?", path_);
      q.bind(1, a.digest);
      if (q.step()) {
        a.id = q.integer(0);
        exec(db_, "COMMIT", path_);
        return a;
      }
    }
    const std::string blob = compress(text);
    Statement ins(db_,
                  "INSERT INTO runs (digest, label, adapter, driver_name, driver_version, gpu, hostname, kernel, "
                  "ipcheck_version, start, duration_s, total, unexpected, added_at, results_encoding, results_size, "
                  "results) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'zlib', ?, ?)",
                  path_);
    ins.bind(1, a.digest).bind(2, label).bind(3, r.run.adapter).bind(4, r.run.driver_name);
    ins.bind(5, r.run.driver_version).bind(6, gpu_of(r.run)).bind(7, r.run.hostname).bind(8, r.run.kernel);
    ins.bind(9, r.run.ipcheck_version).bind(10, r.run.start).bind(11, r.run.duration_s);
    ins.bind(12, static_cast<long long>(r.summary.total)).bind(13, static_cast<long long>(r.summary.unexpected));
    ins.bind(14, iso_now()).bind(15, static_cast<long long>(text.size())).bind_blob(16, blob);
    ins.step();
    a.id = sqlite3_last_insert_rowid(db_);
    const std::string sql = version >= 2 ? "INSERT INTO cases (run_id, case_id, status, reason, attempts, "
                                           "expected_status) VALUES (?, ?, ?, ?, ?, ?)"
                                         : "INSERT INTO cases (run_id, case_id, status, reason) VALUES (?, ?, ?, ?)";
    for (const auto& c : r.cases) {
      Statement row(db_, sql, path_);
      row.bind(1, a.id).bind(2, c.id).bind(3, std::string(to_string(c.status))).bind(4, c.reason);
      if (version >= 2)
        row.bind(5, static_cast<long long>(std::max<std::size_t>(1, c.attempts.size())))
            .bind(6, c.expected_status ? std::string(to_string(*c.expected_status)) : std::string());
      row.step();
    }
    Statement meta(db_, "INSERT OR REPLACE INTO meta (key, value) VALUES ('written_by', ?)", path_);
    meta.bind(1, r.run.ipcheck_version.empty() ? std::string("?") : r.run.ipcheck_version);
    meta.step();
    exec(db_, "COMMIT", path_);
  } catch (...) {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
  a.fresh = true;
  return a;
}

std::vector<StoredRun> Store::runs(const RunFilter& f) const {
  Statement q(db_,
              "SELECT id, digest, label, adapter, driver_name, driver_version, gpu, hostname, kernel, ipcheck_version, "
              "start, added_at, duration_s, total, unexpected, results_size, length(results) FROM runs",
              path_);
  std::vector<StoredRun> out;
  while (q.step()) {
    StoredRun r;
    r.id = q.integer(0);
    r.digest = q.text(1);
    r.label = q.text(2);
    r.adapter = q.text(3);
    r.driver_name = q.text(4);
    r.driver_version = q.text(5);
    r.gpu = q.text(6);
    r.hostname = q.text(7);
    r.kernel = q.text(8);
    r.ipcheck_version = q.text(9);
    r.start = q.text(10);
    r.added_at = q.text(11);
    r.duration_s = q.real(12);
    r.total = static_cast<int>(q.integer(13));
    r.unexpected = static_cast<int>(q.integer(14));
    r.json_bytes = q.integer(15);
    r.stored_bytes = q.integer(16);
    if (!f.adapter.empty() && r.adapter != f.adapter) continue;
    if (!f.gpu.empty() && ::fnmatch(f.gpu.c_str(), r.gpu.c_str(), 0) != 0 &&
        ::fnmatch(("*" + f.gpu + "*").c_str(), r.gpu.c_str(), 0) != 0)
      continue;
    out.push_back(std::move(r));
  }
  std::sort(out.begin(), out.end(), [](const StoredRun& a, const StoredRun& b) {
    if (a.adapter != b.adapter) return a.adapter < b.adapter;
    if (a.driver_name != b.driver_name) return a.driver_name < b.driver_name;
    if (const int c = compare_versions(a.driver_version, b.driver_version)) return c < 0;
    return std::tie(a.start, a.id) < std::tie(b.start, b.id);
  });
  if (f.last > 0 && out.size() > static_cast<std::size_t>(f.last))
    out.erase(out.begin(), out.end() - f.last);
  return out;
}

Results Store::load(long long id) const {
  Statement q(db_, "SELECT results, results_encoding, results_size FROM runs WHERE id = ?", path_);
  q.bind(1, id);
  if (!q.step()) throw StoreError(path_ + ": no run " + std::to_string(id) + " in the store ('ipcheck store ls' lists them)");
  return results_from_blob(q.blob(0), q.text(1), q.integer(2), path_ + ": run " + std::to_string(id));
}

std::vector<Store::CaseRow> Store::case_rows(const std::string& case_id) const {
  const bool v2 = schema_version() >= 2;
  Statement q(db_,
              v2 ? "SELECT run_id, status, reason, attempts FROM cases WHERE case_id = ?"
                 : "SELECT run_id, status, reason, 1 FROM cases WHERE case_id = ?",
              path_);
  q.bind(1, case_id);
  std::vector<CaseRow> out;
  while (q.step()) {
    CaseRow r;
    r.run = q.integer(0);
    const auto st = parse_status(q.text(1));
    if (!st) throw StoreError(path_ + ": case " + case_id + " has unknown status '" + q.text(1) + "'");
    r.status = *st;
    r.reason = q.text(2);
    r.attempts = static_cast<int>(q.integer(3));
    out.push_back(std::move(r));
  }
  return out;
}

FirstBad find_first_bad(const std::vector<StoredRun>& runs, const std::vector<Store::CaseRow>& rows) {
  std::map<long long, const Store::CaseRow*> by_run;
  for (const auto& r : rows) by_run[r.run] = &r;
  FirstBad out;
  for (const auto& run : runs) {
    const auto it = by_run.find(run.id);
    if (it == by_run.end()) continue;  // the case was not in that run
    const Store::CaseRow& row = *it->second;
    if (out.versions.empty() || compare_versions(out.versions.back().version, run.driver_version) != 0)
      out.versions.push_back({run.driver_version, std::nullopt, "", {}, {}});
    VersionVerdict& v = out.versions.back();
    v.runs.push_back(run.label);
    if (!is_judged(row.status)) {
      if (std::find(v.unjudged.begin(), v.unjudged.end(), row.status) == v.unjudged.end()) v.unjudged.push_back(row.status);
    } else if (!v.status || severity(row.status) > severity(*v.status)) {
      v.status = row.status;
      v.reason = row.reason;
    }
  }
  std::optional<std::size_t> previous;
  for (std::size_t i = 0; i < out.versions.size(); ++i) {
    if (!out.versions[i].status) continue;
    if (previous && severity(*out.versions[i].status) > severity(*out.versions[*previous].status)) {
      out.first_bad = i;
      out.last_good = previous;
      break;
    }
    previous = i;
  }
  return out;
}

}  // namespace ipcheck::reports
