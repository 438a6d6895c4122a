// The results store: one copy of each run (by content), runs kept whole, the store's order
// by driver version, migrations from an older schema, refusals of files that are not a store
// (or a newer one), first-bad over versions, and the pieces under them (SHA-256, versions).
#include <sqlite3.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include <gtest/gtest.h>

#include "../src/sha256.hpp"
#include "golden.hpp"
#include "ipcheck/reports/store.hpp"
#include "ipcheck/reports/version.hpp"

namespace ipcheck::reports {
namespace {

using testing::fixture;

// A fresh path for a store, removed at the end of the test.
class StoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = ::testing::TempDir() + "/store-" + info->name() + "-" + std::to_string(::getpid()) + ".sqlite";
    std::filesystem::remove(path_);
  }
  void TearDown() override { std::filesystem::remove(path_); }
  std::string path_;
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

TEST_F(StoreTest, TheSameRunIsKeptOnce) {
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

TEST_F(StoreTest, RunsAreKeptWholeAndOrderedByDriverVersion) {
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

TEST_F(StoreTest, AnOlderStoreIsMigrated) {
  {
    auto v1 = Store::open(path_, true, 1);
    EXPECT_EQ(v1.schema_version(), 1);
    v1.add(fixture("ze-1.3.29735.json"), "a.json");  // memory.open.flags is xfail there
  }
  const auto store = Store::open(path_, false);
  EXPECT_EQ(store.schema_version(), 2);
  EXPECT_EQ(store.runs().size(), 1u) << "the runs stay";
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
  sqlite3_stmt* q = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, "SELECT attempts, expected_status FROM cases WHERE case_id = 'memory.open.flags'", -1,
                               &q, nullptr),
            SQLITE_OK);
  ASSERT_EQ(sqlite3_step(q), SQLITE_ROW);
  EXPECT_EQ(sqlite3_column_int(q, 0), 1);
  EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(q, 1)), "fail") << "backfilled from the run kept whole";
  sqlite3_finalize(q);
  sqlite3_close(db);
}

TEST_F(StoreTest, WhatIsNotAStoreIsRefused) {
  try {
    Store::open(path_, false);
    ADD_FAILURE() << "a missing store was opened";
  } catch (const StoreError& e) {
    EXPECT_NE(std::string(e.what()).find("ipcheck store add RESULTS.json --db"), std::string::npos) << e.what();
  }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
  sqlite3_exec(db, "CREATE TABLE other (x)", nullptr, nullptr, nullptr);
  sqlite3_close(db);
  try {
    Store::open(path_, true);
    ADD_FAILURE() << "another database was taken for a store";
  } catch (const StoreError& e) {
    EXPECT_NE(std::string(e.what()).find("not an ipcheck results store"), std::string::npos) << e.what();
  }
}

TEST_F(StoreTest, ANewerStoreIsRefusedNamingTheWriter) {
  {
    auto store = Store::open(path_, true);
    store.add(fixture("ze-1.3.29735.json"), "a.json");
  }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
  sqlite3_exec(db, "PRAGMA user_version = 9", nullptr, nullptr, nullptr);
  sqlite3_close(db);
  try {
    Store::open(path_, false);
    ADD_FAILURE() << "a newer store was opened";
  } catch (const StoreError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("store schema 9 is newer than this ipcheck's (2)"), std::string::npos) << m;
    EXPECT_NE(m.find("last written by ipcheck "), std::string::npos) << m;
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
