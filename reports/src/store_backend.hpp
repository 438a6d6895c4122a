// The SQL under a results store: one interface, two backends (store_sqlite.cpp,
// store_postgresql.cpp). What both share (the run's key and blob, the store's order, the
// filters, first-bad, copy) stays in store.cpp; a backend only keeps and finds rows.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ipcheck/reports/store.hpp"

namespace ipcheck::reports {

// A run as a backend writes it: the columns of `runs` (a StoredRun's, without the id and
// stored_bytes a store gives; json_bytes is results_size) and one row per case.
struct RunRecord {
  StoredRun run;
  std::string blob;  // the JSON, zlib
  struct Case {
    std::string id, status, reason, expected_status;
    long long attempts = 1;
  };
  std::vector<Case> cases;
  std::string written_by;  // meta.written_by
};

// The case columns of a run, as version 2 keeps them (and its migration backfills them).
std::vector<RunRecord::Case> case_records(const Results& r);

struct StoredBlob {
  std::string blob, encoding;
  long long size = 0;
};

struct RawCaseRow {
  long long run = 0;
  std::string status, reason;
  long long attempts = 1;
};

class StoreBackend {
 public:
  virtual ~StoreBackend() = default;
  virtual const char* name() const = 0;  // "sqlite", "postgresql"
  virtual int schema_version() = 0;
  // Adds the run in one transaction unless its digest is there: {id, fresh}.
  virtual std::pair<long long, bool> add(const RunRecord& r) = 0;
  // Every run, in no order (json_bytes: results_size; stored_bytes: the blob's length).
  virtual std::vector<StoredRun> runs() = 0;
  virtual std::optional<StoredBlob> blob(long long id) = 0;
  virtual std::vector<RawCaseRow> case_rows(const std::string& case_id) = 0;
};

// Each opens (creates, migrates up to `target`) a store; `shown` is the name errors use.
std::unique_ptr<StoreBackend> open_sqlite_store(const std::string& path, bool create, int target, double busy_timeout_s);
std::unique_ptr<StoreBackend> open_postgresql_store(const std::string& uri, const std::string& shown, bool create,
                                                    int target, double busy_timeout_s);

// Connection strings (store.cpp; libpq's parser in store_postgresql_connection.cpp): the
// keywords libpq keeps secret (those PQconninfoParse marks with dispchar '*': password,
// sslpassword; a fixed list without libpq), the secret values libpq reads from a URI or
// keyword string (none without libpq, or when it cannot parse it), every text of a string
// that must never show (raw and decoded), and the password of a URI's user:PASSWORD@ as
// written (decoded).
const std::vector<std::string>& conninfo_secret_keywords();
std::vector<std::string> conninfo_secrets_by_libpq(const std::string& conninfo);
std::vector<std::string> conninfo_secret_texts(const std::string& conninfo);
std::optional<std::string> conninfo_uri_password(const std::string& conninfo);
// M with every one of SECRETS (longest first) replaced by ***.
std::string scrubbed(std::string m, const std::vector<std::string>& secrets);

// A test hook, inside each add's transaction just before it commits: with
// IPCHECK_STORE_TEST_PAUSE_BEFORE_COMMIT=FILE set, creates FILE and waits (up to 120 s) until
// it is removed, so that a test can take the server away from a half-done add.
void pause_before_commit_for_tests();

}  // namespace ipcheck::reports
