// The results store: one copy of each run (by content), runs kept whole, the store's order
// by driver version, migrations from an older schema, refusals of files that are not a store
// (or a newer one), first-bad over versions, and the pieces under them (SHA-256, versions).
// The store's tests run on each backend (StoreTest's parameter): SQLite on a temporary file,
// PostgreSQL on a database of its own on the server that ci/pg-server started (CTest label
// store-pg: the url in $IPCHECK_TEST_PG_STATE/url, or $IPCHECK_TEST_PG_URL); without one they
// are skipped, saying why.
#include <sqlite3.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#if IPCHECK_HAVE_LIBPQ
#include <libpq-fe.h>
#endif

#include <gtest/gtest.h>

#include "../src/sha256.hpp"
#include "golden.hpp"
#include "ipcheck/reports/store.hpp"
#include "ipcheck/reports/version.hpp"

namespace ipcheck::reports {
namespace {

using testing::fixture;

enum class Backend { sqlite, postgresql };

std::string backend_name(const ::testing::TestParamInfo<Backend>& info) {
  return info.param == Backend::sqlite ? "sqlite" : "postgresql";
}

#if IPCHECK_HAVE_LIBPQ
// The test server's URL (a database whose role may create databases), or "".
std::string test_server_url() {
  if (const char* u = std::getenv("IPCHECK_TEST_PG_URL"); u && *u) return u;
  if (const char* st = std::getenv("IPCHECK_TEST_PG_STATE"); st && *st) {
    std::ifstream f(std::string(st) + "/url");
    std::string url;
    if (std::getline(f, url)) return url;
  }
  return "";
}

// The URL with its database replaced by `db`.
std::string with_database(const std::string& url, const std::string& db) {
  const auto authority = url.find("://") + 3;
  const auto slash = url.find('/', authority);
  const auto query = url.find('?', authority);
  if (slash == std::string::npos || (query != std::string::npos && slash > query))
    return url.substr(0, query == std::string::npos ? url.size() : query) + "/" + db +
           (query == std::string::npos ? "" : url.substr(query));
  const auto end = query == std::string::npos ? url.size() : query;
  return url.substr(0, slash + 1) + db + url.substr(end);
}

// One statement on a PostgreSQL database; the first row's columns.
std::vector<std::string> pg_sql(const std::string& url, const std::string& sql) {
  PGconn* c = PQconnectdb(url.c_str());
  std::vector<std::string> out;
  if (PQstatus(c) != CONNECTION_OK) {
    ADD_FAILURE() << url << ": " << PQerrorMessage(c);
  } else {
    PGresult* r = PQexec(c, sql.c_str());
    if (PQresultStatus(r) != PGRES_COMMAND_OK && PQresultStatus(r) != PGRES_TUPLES_OK)
      ADD_FAILURE() << sql << ": " << PQresultErrorMessage(r);
    else if (PQntuples(r) > 0)
      for (int i = 0; i < PQnfields(r); ++i) out.push_back(PQgetvalue(r, 0, i));
    PQclear(r);
  }
  PQfinish(c);
  return out;
}
#endif

std::vector<std::string> sqlite_sql(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  std::vector<std::string> out;
  EXPECT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  sqlite3_stmt* q = nullptr;
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &q, nullptr) != SQLITE_OK) {
    ADD_FAILURE() << sql << ": " << sqlite3_errmsg(db);
  } else {
    const int rc = sqlite3_step(q);
    if (rc == SQLITE_ROW)
      for (int i = 0; i < sqlite3_column_count(q); ++i) {
        const auto* t = sqlite3_column_text(q, i);
        out.push_back(t ? reinterpret_cast<const char*>(t) : "");
      }
    else if (rc != SQLITE_DONE)
      ADD_FAILURE() << sql << ": " << sqlite3_errmsg(db);
  }
  sqlite3_finalize(q);
  sqlite3_close(db);
  return out;
}

// A fresh store for each test, removed at the end: an SQLite file, or a PostgreSQL database.
class StoreTest : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name = info->name();
    name = name.substr(0, name.find('/'));
    if (GetParam() == Backend::sqlite) {
      path_ = ::testing::TempDir() + "/store-" + name + "-" + std::to_string(::getpid()) + ".sqlite";
      std::filesystem::remove(path_);
      return;
    }
#if IPCHECK_HAVE_LIBPQ
    server_ = test_server_url();
    if (server_.empty())
      GTEST_SKIP() << "no PostgreSQL test server: ci/pg-server starts one (CTest: label store-pg); "
                      "or set IPCHECK_TEST_PG_URL";
    std::string db = "store_" + name + "_" + std::to_string(::getpid());
    for (auto& ch : db) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    db_ = db.substr(0, 63);
    pg_sql(server_, "DROP DATABASE IF EXISTS " + db_);
    pg_sql(server_, "CREATE DATABASE " + db_);
    path_ = with_database(server_, db_);
#else
    GTEST_SKIP() << "this ipcheck was built without libpq (install libpq-dev and rebuild)";
#endif
  }
  void TearDown() override {
    if (GetParam() == Backend::sqlite) {
      std::filesystem::remove(path_);
      return;
    }
#if IPCHECK_HAVE_LIBPQ
    if (!db_.empty()) pg_sql(server_, "DROP DATABASE IF EXISTS " + db_ + " WITH (FORCE)");
#endif
  }
  // One statement on the store's database, under the store layer: the first row's columns.
  std::vector<std::string> sql(const std::string& statement) {
#if IPCHECK_HAVE_LIBPQ
    if (GetParam() == Backend::postgresql) return pg_sql(path_, statement);
#endif
    return sqlite_sql(path_, statement);
  }
  std::string path_;    // the store: a file, or a postgresql:// URL
  std::string server_;  // PostgreSQL: the server's URL
  std::string db_;      // PostgreSQL: this test's database
};

TEST(Sha256, KnownDigests) {
  EXPECT_EQ(sha256::hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256::hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256::hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(sha256::hex(std::string(1000000, 'a')), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Versions, DottedNumbersCompareAsNumbers) {
  EXPECT_LT(compare_versions("580.65.06", "580.159.04"), 0);
  EXPECT_LT(compare_versions("1.3.29803", "1.6.31294"), 0);
  EXPECT_LT(compare_versions("9.1", "10.0"), 0);
  EXPECT_EQ(compare_versions("1.3", "1.3.0"), 0);
  EXPECT_GT(compare_versions("25.0.7", "22.3.6"), 0);
}

TEST_P(StoreTest, TheSameRunIsKeptOnce) {
  auto store = Store::open(path_, true);
  EXPECT_EQ(store.schema_version(), kStoreSchemaVersion);
  const Results r = fixture("ze-1.3.29735.json");
  const auto a = store.add(r, "a.json");
  EXPECT_TRUE(a.fresh);
  const auto b = store.add(fixture("ze-1.3.29735.json"), "copy/a.json");
  EXPECT_FALSE(b.fresh) << "the same content, another file";
  EXPECT_EQ(a.id, b.id);
  EXPECT_EQ(a.digest, content_digest(r));
  Results later = r;
  later.run.start = "2026-11-16T10:00:00Z";
  EXPECT_TRUE(store.add(later, "b.json").fresh) << "another night's run of the same driver is another run";
  EXPECT_EQ(store.runs().size(), 2u);
}

TEST_P(StoreTest, RunsAreKeptWholeAndOrderedByDriverVersion) {
  {
    auto store = Store::open(path_, true);
    for (const char* f : {"ze-1.6.31294.json", "ze-1.3.29735.json", "ze-1.3.29803.json"})
      store.add(fixture(f), std::string("data/") + f);
  }
  const auto store = Store::open(path_, false);
  const auto runs = store.runs();
  ASSERT_EQ(runs.size(), 3u);
  EXPECT_EQ(runs[0].driver_version, "1.3.29735");
  EXPECT_EQ(runs[1].driver_version, "1.3.29803");
  EXPECT_EQ(runs[2].driver_version, "1.6.31294");
  EXPECT_EQ(runs[2].label, "data/ze-1.6.31294.json");
  EXPECT_GT(runs[0].json_bytes, runs[0].stored_bytes) << "kept compressed";
  // Whole: the same JSON as the file read.
  EXPECT_EQ(to_json(store.load(runs[2].id)), to_json(fixture("ze-1.6.31294.json")));
  RunFilter last;
  last.last = 2;
  EXPECT_EQ(store.runs(last).front().driver_version, "1.3.29803");
  RunFilter cuda;
  cuda.adapter = "cuda";
  EXPECT_TRUE(store.runs(cuda).empty());
  RunFilter gpu;
  gpu.gpu = "no such gpu";
  EXPECT_TRUE(store.runs(gpu).empty());
  const auto rows = store.case_rows("memory.roundtrip.page");
  EXPECT_EQ(rows.size(), 3u);
}

TEST_P(StoreTest, AnOlderStoreIsMigrated) {
  {
    auto v1 = Store::open(path_, true, 1);
    EXPECT_EQ(v1.schema_version(), 1);
    v1.add(fixture("ze-1.3.29735.json"), "a.json");  // memory.open.flags is xfail there
  }
  const auto store = Store::open(path_, false);
  EXPECT_EQ(store.schema_version(), 2);
  EXPECT_EQ(store.runs().size(), 1u) << "the runs stay";
  const auto row = sql("SELECT attempts, expected_status FROM cases WHERE case_id = 'memory.open.flags'");
  ASSERT_EQ(row.size(), 2u);
  EXPECT_EQ(row[0], "1");
  EXPECT_EQ(row[1], "fail") << "backfilled from the run kept whole";
}

TEST_P(StoreTest, WhatIsNotAStoreIsRefused) {
  try {
    Store::open(path_, false);
    ADD_FAILURE() << "a missing store was opened";
  } catch (const StoreError& e) {
    EXPECT_NE(std::string(e.what()).find("ipcheck store add RESULTS.json --db"), std::string::npos) << e.what();
  }
  sql("CREATE TABLE other (x INTEGER)");
  try {
    Store::open(path_, true);
    ADD_FAILURE() << "another database was taken for a store";
  } catch (const StoreError& e) {
    EXPECT_NE(std::string(e.what()).find("not an ipcheck results store"), std::string::npos) << e.what();
  }
}

TEST_P(StoreTest, ANewerStoreIsRefusedNamingTheWriter) {
  {
    auto store = Store::open(path_, true);
    store.add(fixture("ze-1.3.29735.json"), "a.json");
  }
  sql(GetParam() == Backend::sqlite ? "PRAGMA user_version = 9"
                                    : "UPDATE meta SET value = '9' WHERE key = 'schema_version'");
  try {
    Store::open(path_, false);
    ADD_FAILURE() << "a newer store was opened";
  } catch (const StoreError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("store schema 9 is newer than this ipcheck's (2)"), std::string::npos) << m;
    EXPECT_NE(m.find("last written by ipcheck "), std::string::npos) << m;
  }
}

// Two adds of the same run from two connections at once keep it once (the process-level
// version, sixteen `ipcheck store add` at once, is store_pg.sh concurrent).
TEST_P(StoreTest, ConcurrentAddsOfOneRunKeepItOnce) {
  Store::open(path_, true);
  const Results r = fixture("ze-1.3.29735.json");
  std::vector<std::thread> threads;
  std::vector<Store::Added> added(8);
  for (std::size_t i = 0; i < added.size(); ++i)
    threads.emplace_back([&, i] {
      try {
        auto s = Store::open(path_, false);
        added[i] = s.add(r, "t" + std::to_string(i) + ".json");
      } catch (const StoreError& e) {
        ADD_FAILURE() << e.what();
      }
    });
  for (auto& t : threads) t.join();
  int fresh = 0;
  for (const auto& a : added) {
    fresh += a.fresh;
    EXPECT_EQ(a.id, added[0].id);
  }
  EXPECT_EQ(fresh, 1) << "exactly one add inserted the run";
  const auto store = Store::open(path_, false);
  EXPECT_EQ(store.runs().size(), 1u);
  EXPECT_EQ(sql("SELECT count(*) FROM cases")[0], std::to_string(r.cases.size()));
}

// store copy: into an empty store of the other backend and back, equal; a second copy adds nothing.
TEST_P(StoreTest, CopyToTheOtherBackendAndBackIsEqual) {
  const std::string a = ::testing::TempDir() + "/copy-a-" + std::to_string(::getpid()) + ".sqlite";
  const std::string b = ::testing::TempDir() + "/copy-b-" + std::to_string(::getpid()) + ".sqlite";
  std::filesystem::remove(a);
  std::filesystem::remove(b);
  {
    auto src = Store::open(a, true);
    for (const char* f : {"ze-1.6.31294.json", "ze-1.3.29735.json", "ze-1.3.29803.json"})
      src.add(fixture(f), std::string("data/") + f);
  }
  const auto src = Store::open(a, false);
  auto mid = Store::open(path_, true);
  const auto n = copy_runs(src, mid);
  EXPECT_EQ(n.copied, 3u);
  EXPECT_EQ(n.already, 0u);
  const auto again = copy_runs(src, mid);
  EXPECT_EQ(again.copied, 0u) << "copying twice adds nothing";
  EXPECT_EQ(again.already, 3u);
  auto back = Store::open(b, true);
  EXPECT_EQ(copy_runs(mid, back).copied, 3u);
  const auto x = src.runs(), y = mid.runs(), z = back.runs();
  ASSERT_EQ(x.size(), 3u);
  ASSERT_EQ(y.size(), 3u);
  ASSERT_EQ(z.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    for (const auto* r : {&y[i], &z[i]}) {
      EXPECT_EQ(r->digest, x[i].digest);
      EXPECT_EQ(r->label, x[i].label);
      EXPECT_EQ(r->added_at, x[i].added_at) << "a copied run keeps when it was added";
      EXPECT_EQ(r->driver_version, x[i].driver_version);
      EXPECT_EQ(r->gpu, x[i].gpu);
      EXPECT_EQ(r->duration_s, x[i].duration_s);
      EXPECT_EQ(r->json_bytes, x[i].json_bytes);
      EXPECT_EQ(r->stored_bytes, x[i].stored_bytes) << "the same blob, byte for byte";
    }
    EXPECT_EQ(to_json(back.load(z[i].id)), to_json(src.load(x[i].id)));
  }
  for (const char* c : {"memory.roundtrip.page", "memory.open.flags"}) {
    const auto fx = find_first_bad(x, src.case_rows(c)), fz = find_first_bad(z, back.case_rows(c));
    EXPECT_EQ(fx.first_bad, fz.first_bad);
    EXPECT_EQ(fx.versions.size(), fz.versions.size());
  }
  std::filesystem::remove(a);
  std::filesystem::remove(b);
}

INSTANTIATE_TEST_SUITE_P(Backends, StoreTest, ::testing::Values(Backend::sqlite, Backend::postgresql), backend_name);

TEST(StoreUri, PostgresqlIsChosenByTheDbValue) {
  EXPECT_TRUE(is_postgresql_store("postgresql://ci@db.example/results"));
  EXPECT_TRUE(is_postgresql_store("postgres://ci@db.example/results"));
  EXPECT_TRUE(is_postgresql_store("postgresql:"));
  EXPECT_FALSE(is_postgresql_store("runs.sqlite"));
  EXPECT_FALSE(is_postgresql_store("postgresql.sqlite"));
  EXPECT_FALSE(is_postgresql_store("./postgresql:"));
}

TEST(StoreUri, PasswordsAreNeverShown) {
  EXPECT_EQ(redact_store_name("postgresql://ci:s3cret@db.example:5432/results"), "postgresql://ci:***@db.example:5432/results");
  EXPECT_EQ(redact_store_name("postgres://ci:p@ss@w@rd@db/r?sslmode=require"), "postgres://ci:***@db/r?sslmode=require");
  EXPECT_EQ(redact_store_name("postgresql:///r?host=/run/pg&password=s3cret&user=ci"),
            "postgresql:///r?host=/run/pg&password=***&user=ci");
  EXPECT_EQ(redact_store_name("postgresql://ci@db/r"), "postgresql://ci@db/r");
  EXPECT_EQ(redact_store_name("postgresql://db/r?x=a@b:c"), "postgresql://db/r?x=a@b:c") << "no user info";
  EXPECT_EQ(redact_store_name("dir/pass:word@x.sqlite"), "dir/pass:word@x.sqlite") << "a path stays as it is";
  // A server that is not there: the error names the store, never the password.
  try {
    Store::open("postgresql://ci:s3cret@/results?host=/nonexistent-ipcheck-socket-dir&connect_timeout=2", true);
    ADD_FAILURE() << "a store on no server was opened";
  } catch (const StoreError& e) {
    const std::string m = e.what();
    EXPECT_EQ(m.find("s3cret"), std::string::npos) << m;
    EXPECT_NE(m.find("postgresql://ci:***@/results"), std::string::npos) << m;
    if (postgresql_store_available())
      EXPECT_NE(m.find("cannot connect to the PostgreSQL store"), std::string::npos) << m;
    else
      EXPECT_NE(m.find("install libpq-dev (Debian) and rebuild"), std::string::npos) << m;
  }
}

// Every form a password may take in a connection string (issue 41): in a URI's user info
// (holding '?', '#', '/', '@', '%'-encoded), as a parameter (password=, %70assword=, an encoded
// value, sslpassword=), and in libpq's keyword form (bare, quoted, with escapes). None shows in
// the redacted name, and a store opened on no server never shows it in its error.
TEST(StoreUri, EveryPasswordFormIsRedacted) {
  struct Form {
    const char* conninfo;
    const char* secret;
  };
  const Form forms[] = {
      {"postgresql://ci:s3cret@db/r", "s3cret"},
      {"postgresql://ci:pa?ss@db/r", "pa?ss"},
      {"postgresql://ci:pa#ss@/r?host=/nonexistent-ipcheck-socket-dir", "pa#ss"},
      {"postgresql://ci:pa/ss@/r?host=/nonexistent-ipcheck-socket-dir", "pa/ss"},
      {"postgresql://ci:pa@ss@/r?host=/nonexistent-ipcheck-socket-dir", "pa@ss"},
      {"postgresql://ci:p%61ssw0rd@/r?host=/nonexistent-ipcheck-socket-dir", "passw0rd"},
      {"postgres://ci:s3cret@db:5432/r?sslmode=disable", "s3cret"},
      {"postgresql:///r?host=/nonexistent-ipcheck-socket-dir&password=s3cret", "s3cret"},
      {"postgresql:///r?host=/nonexistent-ipcheck-socket-dir&%70assword=s3cret", "s3cret"},
      {"postgresql:///r?host=/nonexistent-ipcheck-socket-dir&pass%77ord=s3cret", "s3cret"},
      {"postgresql:///r?password=s%33cret&host=/nonexistent-ipcheck-socket-dir", "s3cret"},
      {"postgresql:///r?host=/nonexistent-ipcheck-socket-dir&sslpassword=k3ypass", "k3ypass"},
      {"postgresql:///r?host=/nonexistent-ipcheck-socket-dir&ssl%70assword=k3ypass", "k3ypass"},
      {"host=/nonexistent-ipcheck-socket-dir dbname=r password=s3cret", "s3cret"},
      {"host=/nonexistent-ipcheck-socket-dir password = 's3 cret' dbname=r", "s3 cret"},
      {"password='it\\'s' host=db", "it's"},
      {"sslpassword=k3ypass host=db", "k3ypass"},
  };
  for (const auto& f : forms) {
    const std::string shown = redact_conninfo(f.conninfo);
    EXPECT_EQ(shown.find(f.secret), std::string::npos) << f.conninfo << " -> " << shown;
    EXPECT_NE(shown.find("***"), std::string::npos) << f.conninfo << " -> " << shown;
    if (!is_postgresql_store(f.conninfo)) continue;
    EXPECT_EQ(redact_store_name(f.conninfo), shown);
    try {
      Store::open(std::string(f.conninfo) + (std::string(f.conninfo).find('?') == std::string::npos ? "?" : "&") +
                      "connect_timeout=2",
                  true);
      ADD_FAILURE() << "a store on no server was opened: " << f.conninfo;
    } catch (const StoreError& e) {
      const std::string m = e.what();
      EXPECT_EQ(m.find(f.secret), std::string::npos) << f.conninfo << ": " << m;
      EXPECT_NE(m.find("***"), std::string::npos) << f.conninfo << ": " << m;
    }
  }
}

StoredRun run(long long id, std::string version, std::string label = "") {
  StoredRun r;
  r.id = id;
  r.driver_version = std::move(version);
  r.label = label.empty() ? "run" + std::to_string(id) : label;
  return r;
}

Store::CaseRow row(long long run, Status s, std::string reason = "") {
  Store::CaseRow r;
  r.run = run;
  r.status = s;
  r.reason = std::move(reason);
  return r;
}

TEST(FirstBad, TheFirstVersionThatGotWorseAndTheLastGoodOne) {
  const auto fb = find_first_bad({run(1, "1.2"), run(2, "1.3"), run(3, "1.3"), run(4, "1.10"), run(5, "2.0")},
                                 {row(1, Status::pass), row(2, Status::pass), row(3, Status::xfail),
                                  row(4, Status::crash, "consumer died by SIGSEGV"), row(5, Status::pass)});
  ASSERT_EQ(fb.versions.size(), 4u);
  EXPECT_EQ(*fb.versions[1].status, Status::xfail) << "the worst over a version's runs";
  ASSERT_TRUE(fb.first_bad);
  EXPECT_EQ(fb.versions[*fb.first_bad].version, "1.3") << "pass -> xfail is worse";
  EXPECT_EQ(fb.versions[*fb.last_good].version, "1.2");
}

TEST(FirstBad, UnjudgedVersionsArePassedOver) {
  const auto fb = find_first_bad({run(1, "1"), run(2, "2"), run(3, "3"), run(4, "4"), run(5, "5")},
                                 {row(1, Status::pass), row(2, Status::skip), row(3, Status::flaky),
                                  row(4, Status::error), row(5, Status::fail, "size")});
  ASSERT_TRUE(fb.first_bad);
  EXPECT_EQ(fb.versions[*fb.first_bad].version, "5");
  EXPECT_EQ(fb.versions[*fb.last_good].version, "1") << "skip, flaky and error judge nothing";
  EXPECT_EQ(fb.versions[2].unjudged, std::vector<Status>{Status::flaky});
}

TEST(FirstBad, NeverWorseAndCasesMissingFromRuns) {
  const auto fb = find_first_bad({run(1, "1"), run(2, "2"), run(3, "3")}, {row(1, Status::fail), row(3, Status::pass)});
  EXPECT_FALSE(fb.first_bad);
  EXPECT_EQ(fb.versions.size(), 2u) << "run 2 lacks the case";
}

}  // namespace
}  // namespace ipcheck::reports
