// The results model and its schema: a file reads back as written, and a file of another
// schema version or another kind says so, naming the file and the way out.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "golden.hpp"
#include "ipcheck/reports/files.hpp"
#include "ipcheck/reports/results.hpp"

namespace ipcheck::reports {
namespace {

using testing::fixture;
using testing::fixture_path;

std::string error_of(const std::string& path) {
  try {
    read_results(path);
  } catch (const SchemaError& e) {
    return e.what();
  }
  return "";
}

std::string error_of_json(const nlohmann::json& j) {
  try {
    from_json(j);
  } catch (const SchemaError& e) {
    return e.what();
  }
  return "";
}

std::string temp_file(const std::string& name, const std::string& content) {
  const auto dir = std::filesystem::temp_directory_path() / ("ipcheck-reports-test-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto p = dir / name;
  std::ofstream(p) << content;
  return p.string();
}

TEST(Status, OrderIsPassXfailFailLeakTimeoutCrash) {
  EXPECT_LT(severity(Status::pass), severity(Status::xfail));
  EXPECT_LT(severity(Status::xfail), severity(Status::fail));
  EXPECT_LT(severity(Status::fail), severity(Status::leak));
  EXPECT_LT(severity(Status::leak), severity(Status::timeout));
  EXPECT_LT(severity(Status::timeout), severity(Status::crash));
  EXPECT_EQ(severity(Status::skip), -1) << "skip is not ranked";
  EXPECT_EQ(severity(Status::incomplete), -1) << "incomplete is not ranked";
  for (Status s : kAllStatuses) EXPECT_EQ(parse_status(to_string(s)), s);
  EXPECT_FALSE(parse_status("passed"));
}

TEST(Results, FixtureReadsBackAsWritten) {
  const Results r = fixture("ze-1.6.31294.json");
  EXPECT_EQ(r.run.adapter, "ze");
  EXPECT_EQ(r.run.driver_version, "1.6.31294");
  EXPECT_EQ(r.summary.total, 11);
  EXPECT_EQ(r.summary.unexpected, 5);
  EXPECT_EQ(r.summary.counts.at("crash"), 1);
  ASSERT_FALSE(r.cases.empty());
  EXPECT_EQ(r.cases[0].roles[1].signal, 11);
  EXPECT_TRUE(r.fuzz.is_object());
  EXPECT_TRUE(r.bench.is_object());
  // Written and read again: the same document.
  const std::string path = temp_file("roundtrip.json", "");
  write_results(path, r);
  EXPECT_EQ(to_json(read_results(path)).dump(), to_json(r).dump());
}

TEST(Results, SummaryIsRecomputedFromTheCases) {
  nlohmann::json j = to_json(fixture("ze-1.3.29735.json"));
  j["summary"] = {{"total", 99}, {"unexpected", 0}, {"counts", {{"pass", 99}}}};
  const Results r = from_json(j);
  EXPECT_EQ(r.summary.total, 10) << "the file's summary is not trusted";
  EXPECT_EQ(r.summary.unexpected, 1);
}

TEST(Results, FieldsItDoesNotKnowAreIgnored) {
  nlohmann::json j = to_json(fixture("ze-1.3.29735.json"));
  j["run"]["gpu_temperature_c"] = 71;
  j["cases"][0]["power_w"] = 300;
  j["extension"] = {{"anything", true}};
  EXPECT_NO_THROW(from_json(j)) << "adding optional fields does not change the schema version";
}

TEST(Schema, NewerVersionSaysNewerAndWhoWroteIt) {
  const std::string e = error_of(fixture_path("schema-newer.json"));
  EXPECT_NE(e.find("schema-newer.json"), std::string::npos) << e;
  EXPECT_NE(e.find("\"ipcheck.results/3\" is newer"), std::string::npos) << e;
  EXPECT_NE(e.find("written by ipcheck 0.4.0"), std::string::npos) << e;
  EXPECT_NE(e.find("reads \"ipcheck.results/1\" to \"ipcheck.results/2\""), std::string::npos) << e;
  EXPECT_NE(e.find("newer one"), std::string::npos) << "says what to do: " << e;
}

// Version 1 files (the committed baselines of before) are read into this version: who
// decided each check is unknown there, and a clause whose cases skipped is not_run.
TEST(Schema, VersionOneIsConverted) {
  nlohmann::json j = to_json(fixture("ze-1.3.29735.json"));
  j["schema"] = "ipcheck.results/1";
  for (auto& c : j["cases"])
    for (auto& k : c["checks"]) k.erase("decided_by");
  j["clauses"][0]["verdict"] = "skip";
  const Results r = from_json(j);
  EXPECT_EQ(r.schema, "ipcheck.results/2") << "what is written again is this version";
  bool any = false;
  for (const auto& c : r.cases)
    for (const auto& k : c.checks) {
      EXPECT_EQ(k.decided_by, Decider::unknown);
      any = true;
    }
  EXPECT_TRUE(any);
  EXPECT_EQ(r.clauses[0].verdict, ClauseVerdict::not_run);
  j["clauses"][0]["verdict"] = "maybe";
  EXPECT_THROW(from_json(j), SchemaError) << "an unknown verdict names the field";
}

TEST(Schema, OlderVersionSaysOlderAndHowToGetOut) {
  const std::string e = error_of(fixture_path("schema-older.json"));
  EXPECT_NE(e.find("\"ipcheck.results/0\" is older"), std::string::npos) << e;
  EXPECT_NE(e.find("re-run the suite"), std::string::npos) << e;
}

TEST(Schema, OtherDocumentsAreNotResults) {
  EXPECT_NE(error_of_json({{"schema", "benchmark/1"}, {"run", nlohmann::json::object()}}).find("not an ipcheck results file"),
            std::string::npos);
  EXPECT_NE(error_of_json({{"schema", "ipcheck.results/one"}}).find("not an ipcheck results file"), std::string::npos);
  // Google Benchmark's own output, given by mistake.
  EXPECT_NE(error_of_json({{"context", {{"date", "x"}}}, {"benchmarks", nlohmann::json::array()}}).find("no \"schema\""),
            std::string::npos);
  EXPECT_NE(error_of_json(nlohmann::json::array()).find("not a JSON object"), std::string::npos);
  EXPECT_NE(error_of_json({{"schema", "ipcheck.results/1"}}).find("no \"run\" object"), std::string::npos);
}

TEST(Schema, UnknownStatusNamesTheCase) {
  nlohmann::json j = to_json(fixture("ze-1.3.29735.json"));
  j["cases"][2]["status"] = "wobbly";
  const std::string e = error_of_json(j);
  EXPECT_NE(e.find("memory.open.size"), std::string::npos) << e;
  EXPECT_NE(e.find("\"wobbly\""), std::string::npos) << e;
}

TEST(Schema, UnreadableAndBrokenFilesNameThePath) {
  EXPECT_NE(error_of("/nonexistent/results.json").find("cannot read results file '/nonexistent/results.json'"),
            std::string::npos)
      << error_of("/nonexistent/results.json");
  const std::string broken = temp_file("broken.json", "{\"schema\": \"ipcheck.results/1\", \"run\": {");
  const std::string e = error_of(broken);
  EXPECT_NE(e.find("results file '" + broken + "' is not valid JSON"), std::string::npos) << e;
  const std::string typed = temp_file("typed.json", R"({"schema": "ipcheck.results/1", "run": {"adapter": 7}})");
  EXPECT_NE(error_of(typed).find(typed + ": results: run: field \"adapter\" is number, not text"), std::string::npos)
      << error_of(typed);
}

// Inputs are regular files of bounded size; a FIFO is refused at once, never waited on.
TEST(Files, OnlyRegularFilesAreRead) {
  const std::string dir = ::testing::TempDir() + "files-test";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string fifo = dir + "/fifo.json";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  try {
    (void)read_regular_file(fifo, "results file", 1024);
    ADD_FAILURE() << "a FIFO was read";
  } catch (const FileError& e) {
    EXPECT_STREQ(e.what(), ("results file '" + fifo + "' is a FIFO (named pipe); give a regular file").c_str());
  }
  try {
    (void)read_regular_file(dir, "reproducer", 1024);
    ADD_FAILURE() << "a folder was read";
  } catch (const FileError& e) {
    EXPECT_NE(std::string(e.what()).find("is a folder"), std::string::npos) << e.what();
  }
  const std::string big = temp_file("big.json", std::string(2000, ' '));
  try {
    (void)read_regular_file(big, "results file", 1024);
    ADD_FAILURE() << "a file over the bound was read";
  } catch (const FileError& e) {
    EXPECT_NE(std::string(e.what()).find("2000 bytes, more than the 1024"), std::string::npos) << e.what();
  }
  EXPECT_EQ(read_regular_file(big, "results file", 4096).size(), 2000u);
  std::filesystem::remove_all(dir);
}

// One atomic write: the content in full, nothing left beside it, links never followed,
// and a failure that names the file and keeps the previous one.
TEST(Files, AtomicWriteReplacesWholeOrNothing) {
  namespace fs = std::filesystem;
  const std::string dir = ::testing::TempDir() + "atomic-test";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string target = dir + "/report.md", victim = dir + "/victim";
  write_file_atomic(victim, "keep me");
  fs::create_symlink(victim, target + ".tmp");  // the old fixed temporary name
  write_file_atomic(target, "first");
  write_file_atomic(target, "second");
  std::ifstream in(target);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), "second");
  std::ifstream v(victim);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(v), {}), "keep me");
  std::size_t entries = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    (void)e;
    ++entries;
  }
  EXPECT_EQ(entries, 3u) << "a temporary file was left in " << dir;
  try {
    write_file_atomic(dir + "/missing/report.md", "x");
    ADD_FAILURE() << "a write into a missing folder succeeded";
  } catch (const FileError& e) {
    EXPECT_NE(std::string(e.what()).find("cannot write '" + dir + "/missing/report.md': creating a temporary file"),
              std::string::npos)
        << e.what();
  }
  fs::remove_all(dir);
}

// A number beyond a double names the field it was the value of.
TEST(Files, NumberOverflowNamesTheField) {
  try {
    (void)parse_json_text(R"({"run": {"duration_s": 1, "x": [0, {"y": 1e999}]}})", "r.json", "results file");
    ADD_FAILURE() << "1e999 was accepted";
  } catch (const FileError& e) {
    EXPECT_NE(std::string(e.what()).find("results file 'r.json': field run.x[1].y: number overflow parsing '1e999'"),
              std::string::npos)
        << e.what();
  }
}

// Nesting is bounded before parsing: 100,000 levels is a clear refusal, never a stack
// overflow; brackets inside strings do not count; 128 levels still read.
TEST(Files, DeepNestingIsRefusedBeforeParsing) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  try {
    (void)parse_json_text("{\"x\": " + deep + "}", "d.json", "results file");
    ADD_FAILURE() << "100,000 levels were parsed";
  } catch (const FileError& e) {
    EXPECT_NE(std::string(e.what()).find("results file 'd.json' nests objects and arrays deeper than 128 levels (at byte 134 (line 1))"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(json_too_deep(std::string(127, '[') + std::string(127, ']')), "");
  EXPECT_EQ(json_too_deep("{\"s\": \"" + std::string(500, '[') + "\\\"[\"}"), "");
  EXPECT_EQ(json_too_deep("[\n[[", 2), "byte 4 (line 2)");
}

// Text that is not UTF-8 is escaped byte by byte as \xNN; well-formed text is left alone.
TEST(Files, InvalidUtf8IsEscapedNeverFatal) {
  EXPECT_TRUE(is_utf8("caf\xc3\xa9 \xf0\x9f\x98\x80"));
  for (const char* bad : {"\xe9", "\xc0\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xe2\x82", "\xff"})
    EXPECT_FALSE(is_utf8(bad)) << bad;
  EXPECT_EQ(escape_invalid_utf8("Caf\xe9 \xc3\xa9"), "Caf\\xe9 \xc3\xa9");
  nlohmann::json j = {{"run", {{"out", "run-\xe9"}, {"ok", "fine"}}}, {"cases", {{{"reason", "bad \xff"}}}}};
  j["run"]["k\xfe"] = 1;
  std::vector<std::string> where;
  const std::string text = dump_json(j, -1, &where);
  EXPECT_EQ(where, (std::vector<std::string>{"cases[0].reason", "run.k\\xfe (its name)", "run.out"}));
  const nlohmann::json back = nlohmann::json::parse(text);
  EXPECT_EQ(back["run"]["out"], "run-\\xe9");
  EXPECT_EQ(back["run"]["k\\xfe"], 1);
  EXPECT_EQ(dump_json(nlohmann::json{{"a", "b"}}), "{\"a\":\"b\"}");
}

// Two results for one case would let a regression hide behind the first.
TEST(Schema, DuplicateCaseIdsAreRefused) {
  nlohmann::json j = to_json(fixture("ze-1.3.29735.json"));
  j["cases"].push_back(j["cases"][1]);
  const std::string e = error_of_json(j);
  EXPECT_NE(e.find("case id \"" + j["cases"][1]["id"].get<std::string>() + "\" appears twice"), std::string::npos) << e;
}

}  // namespace
}  // namespace ipcheck::reports
