// The SQLite backend of the results store: one file, SQLite's locking between writers.
#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>
#include <sqlite3.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <algorithm>
#include <filesystem>
#include <tuple>

#include "store_backend.hpp"

namespace ipcheck::reports {

namespace {

using fs_path = std::filesystem::path;

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
  // Ready to run again with new bindings.
  void reset() {
    sqlite3_reset(s_);
    sqlite3_clear_bindings(s_);
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
      for (const auto& c : case_records(r)) {
        Statement u(raw, "UPDATE cases SET attempts = ?, expected_status = ? WHERE run_id = ? AND case_id = ?", path);
        u.bind(1, c.attempts).bind(2, c.expected_status).bind(3, id).bind(4, c.id);
        u.step();
      }
    }
  }
  exec(raw, "PRAGMA user_version = " + std::to_string(v), path);
}

// A new store is made under a temporary name beside its path (".NAME.RANDOM.tmp", created
// exclusively) and linked as its path when its first add commits: a failed first add (a full
// disk, a bad run, a signal) leaves no store file behind, not even an empty one.
std::string new_store_file(const std::string& path) {
  const fs_path p(path);
  for (int attempt = 0; attempt < 16; ++attempt) {
    unsigned char b[6];
    if (::getrandom(b, sizeof b, GRND_NONBLOCK) != static_cast<ssize_t>(sizeof b))
      for (auto& c : b) c = static_cast<unsigned char>(std::rand());
    char suffix[13];
    std::snprintf(suffix, sizeof suffix, "%02x%02x%02x%02x%02x%02x", b[0], b[1], b[2], b[3], b[4], b[5]);
    const std::string tmp = (p.parent_path() / ("." + p.filename().string() + "." + suffix + ".tmp")).string();
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd >= 0) {
      ::close(fd);
      return tmp;
    }
    if (errno != EEXIST)
      throw StoreError(path + ": cannot create the store (" + std::strerror(errno) +
                       "); check that its folder exists and that this user may write there");
  }
  throw StoreError(path + ": cannot create the store (no free temporary name beside it)");
}

void remove_store_file(const std::string& f) {
  ::unlink(f.c_str());
  ::unlink((f + "-journal").c_str());
}

class SqliteBackend final : public StoreBackend {
 public:
  SqliteBackend(sqlite3* db, std::string path, std::string pending = "")
      : db_(db), path_(std::move(path)), pending_(std::move(pending)) {}
  // A new store not yet published: made at its path now (an empty store, as opened), unless
  // opening it or an add failed, or another process made one there meanwhile: then removed.
  ~SqliteBackend() override {
    sqlite3_close(db_);
    if (pending_.empty()) return;
    if (failed_ || !link_into_place()) remove_store_file(pending_);
  }

  // renameat2's RENAME_NOREPLACE (never over a store another process made meanwhile); where
  // a file system lacks it (EINVAL), a hard link and the temporary name removed.
  bool link_into_place() {
    int rc = ::renameat2(AT_FDCWD, pending_.c_str(), AT_FDCWD, path_.c_str(), RENAME_NOREPLACE);
    if (rc != 0 && errno == EINVAL && (rc = ::link(pending_.c_str(), path_.c_str())) == 0) ::unlink(pending_.c_str());
    return rc == 0;
  }

  bool failed_ = true;  // until open_sqlite_store returns it; again when an add fails
  SqliteBackend(const SqliteBackend&) = delete;
  SqliteBackend& operator=(const SqliteBackend&) = delete;

  const char* name() const override { return "sqlite"; }
  sqlite3* db() { return db_; }

  int schema_version() override { return static_cast<int>(pragma(db_, "user_version", path_)); }

  std::pair<long long, bool> add(const RunRecord& rec) override {
    const StoredRun& r = rec.run;
    const int version = schema_version();
    exec(db_, "BEGIN IMMEDIATE", path_);
    long long id = 0;
    try {
      {
        Statement q(db_, "SELECT id FROM runs WHERE digest = ?", path_);
        q.bind(1, r.digest);
        if (q.step()) {
          id = q.integer(0);
          exec(db_, "COMMIT", path_);
          return {id, false};
        }
      }
      Statement ins(db_,
                    "INSERT INTO runs (digest, label, adapter, driver_name, driver_version, gpu, hostname, kernel, "
                    "ipcheck_version, start, duration_s, total, unexpected, added_at, results_encoding, results_size, "
                    "results) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'zlib', ?, ?)",
                    path_);
      ins.bind(1, r.digest).bind(2, r.label).bind(3, r.adapter).bind(4, r.driver_name);
      ins.bind(5, r.driver_version).bind(6, r.gpu).bind(7, r.hostname).bind(8, r.kernel);
      ins.bind(9, r.ipcheck_version).bind(10, r.start).bind(11, r.duration_s);
      ins.bind(12, static_cast<long long>(r.total)).bind(13, static_cast<long long>(r.unexpected));
      ins.bind(14, r.added_at).bind(15, r.json_bytes).bind_blob(16, rec.blob);
      ins.step();
      id = sqlite3_last_insert_rowid(db_);
      const std::string sql = version >= 2 ? "INSERT INTO cases (run_id, case_id, status, reason, attempts, "
                                             "expected_status) VALUES (?, ?, ?, ?, ?, ?)"
                                           : "INSERT INTO cases (run_id, case_id, status, reason) VALUES (?, ?, ?, ?)";
      Statement row(db_, sql, path_);
      for (const auto& c : rec.cases) {
        row.bind(1, id).bind(2, c.id).bind(3, c.status).bind(4, c.reason);
        if (version >= 2) row.bind(5, c.attempts).bind(6, c.expected_status);
        row.step();
        row.reset();
      }
      Statement meta(db_, "INSERT OR REPLACE INTO meta (key, value) VALUES ('written_by', ?)", path_);
      meta.bind(1, rec.written_by);
      meta.step();
      pause_before_commit_for_tests();
      exec(db_, "COMMIT", path_);
    } catch (...) {
      sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
      failed_ = true;
      throw;
    }
    if (!pending_.empty()) return publish(rec, id);
    return {id, true};
  }

  // The first add of a new store has committed in its temporary file: linked as the store's
  // path (never over a store another process made meanwhile: then the run is added there).
  std::pair<long long, bool> publish(const RunRecord& rec, long long id) {
    const bool placed = link_into_place();
    const int err = errno;
    if (!placed && err != EEXIST) {
      failed_ = true;
      throw StoreError(path_ + ": cannot create the store (" + std::strerror(err) + "); the run was not added");
    }
    // SQLite refuses to write a database file renamed under it: the store is opened again at
    // its path (and, made by another process meanwhile, the run added there).
    auto there = open_sqlite_store(path_, false, kStoreSchemaVersion, busy_timeout_s_);
    auto* other = static_cast<SqliteBackend*>(there.get());
    const auto out = placed ? std::pair<long long, bool>{id, true} : other->add(rec);
    std::swap(db_, other->db_);
    if (!placed) remove_store_file(pending_);
    pending_.clear();
    return out;
  }

  double busy_timeout_s_ = 30;

  std::vector<StoredRun> runs() override {
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
      out.push_back(std::move(r));
    }
    return out;
  }

  std::optional<StoredBlob> blob(long long id) override {
    Statement q(db_, "SELECT results, results_encoding, results_size FROM runs WHERE id = ?", path_);
    q.bind(1, id);
    if (!q.step()) return std::nullopt;
    return StoredBlob{q.blob(0), q.text(1), q.integer(2)};
  }

  std::vector<RawCaseRow> case_rows(const std::string& case_id) override {
    Statement q(db_,
                schema_version() >= 2 ? "SELECT run_id, status, reason, attempts FROM cases WHERE case_id = ?"
                                      : "SELECT run_id, status, reason, 1 FROM cases WHERE case_id = ?",
                path_);
    q.bind(1, case_id);
    std::vector<RawCaseRow> out;
    while (q.step()) out.push_back({q.integer(0), q.text(1), q.text(2), q.integer(3)});
    return out;
  }

 private:
  sqlite3* db_;
  std::string path_;
  std::string pending_;  // a new store's temporary file, until its first add commits
};

}  // namespace

std::unique_ptr<StoreBackend> open_sqlite_store(const std::string& path, bool create, int target, double busy_timeout_s) {
  check_store_path(path);
  std::error_code ec;
  const bool exists = std::filesystem::exists(path, ec);
  if (!create && !exists)
    throw StoreError(path + ": no store there; create one by adding a run: ipcheck store add RESULTS.json --db " + path);
  const std::string pending = exists ? std::string() : new_store_file(path);
  sqlite3* raw = nullptr;
  const int flags = SQLITE_OPEN_READWRITE;
  if (sqlite3_open_v2(pending.empty() ? path.c_str() : pending.c_str(), &raw, flags, nullptr) != SQLITE_OK) {
    const std::string why = raw ? sqlite3_errmsg(raw) : "out of memory";
    sqlite3_close(raw);
    if (!pending.empty()) remove_store_file(pending);
    throw StoreError(path + ": cannot open the store (" + why + "); check the path and its permissions");
  }
  auto s = std::make_unique<SqliteBackend>(raw, path, pending);
  s->busy_timeout_s_ = busy_timeout_s;
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
  if (seen >= target) {
    s->failed_ = false;
    return s;
  }
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
  s->failed_ = false;
  return s;
}

}  // namespace ipcheck::reports
