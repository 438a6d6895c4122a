// The ur adapter without the Unified Runtime stack: its registration, init's answers when the
// loader is missing or is not UR's, its options, and the names of UR's results.
#include <gtest/gtest.h>

#include <cstdlib>

#include "ipcheck/adapter.hpp"
#include "ipcheck/ur/ur_api.hpp"

namespace ipcheck {
namespace {

std::unique_ptr<Adapter> make_ur() {
  const AdapterDesc* d = find_adapter("ur");
  EXPECT_NE(d, nullptr);
  return d->create();
}

TEST(UrAdapter, ClaimsSyclAndUr) {
  const AdapterDesc* d = find_adapter("ur");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->profiles, (std::vector<std::string>{"sycl", "ur"}));
  EXPECT_EQ(d->options, (std::vector<std::string>{"loader", "release", "backend", "l0"}));
  // A library to load (or a oneAPI release, which names one) comes only from the command line.
  EXPECT_EQ(d->path_options, (std::vector<std::string>{"loader", "release"}));
}

TEST(UrAdapter, UnknownReleaseIsNotImplementedAndNamesTheFix) {
  auto a = make_ur();
  AdapterConfig c;
  c.options["release"] = "1999.0.0";
  const Outcome o = a->init(c);
  EXPECT_EQ(o.code, Errc::not_implemented) << o.describe();
  EXPECT_NE(o.message.find("no installed oneAPI release '1999.0.0'"), std::string::npos) << o.message;
  EXPECT_NE(o.message.find("ci/oneapi-stack"), std::string::npos) << o.message;
}

TEST(UrAdapter, LoaderAndReleaseTogetherAreRefused) {
  auto a = make_ur();
  AdapterConfig c;
  c.options["loader"] = "/nonexistent/libur_loader.so.0";
  c.options["release"] = "/nonexistent/release";
  const Outcome o = a->init(c);
  EXPECT_NE(o.code, Errc::success) << o.describe();
}

TEST(UrAdapter, MissingLoaderIsNotImplemented) {
  auto a = make_ur();
  AdapterConfig c;
  c.options["loader"] = "/nonexistent/libur_loader.so.0";
  const Outcome o = a->init(c);
  EXPECT_EQ(o.code, Errc::not_implemented) << o.describe();
  EXPECT_EQ(o.message.rfind("no Unified Runtime: ", 0), 0u) << o.message;
  EXPECT_NE(o.message.find("/nonexistent/libur_loader.so.0"), std::string::npos) << o.message;
  EXPECT_NE(o.message.find("ci/ur-stack"), std::string::npos) << o.message;
  EXPECT_EQ(o.by, Decided::adapter);
}

TEST(UrAdapter, LibraryWithoutUrSymbolsIsNotImplemented) {
  auto a = make_ur();
  AdapterConfig c;
  c.options["loader"] = "libc.so.6";
  const Outcome o = a->init(c);
  EXPECT_EQ(o.code, Errc::not_implemented) << o.describe();
  EXPECT_NE(o.message.find("lacks urLoaderInit"), std::string::npos) << o.message;
}

TEST(UrAdapter, BadOptionsAreInvalidAndNamed) {
  const std::vector<std::tuple<std::string, std::string, std::string>> bad = {
      {"colour", "green", "unknown adapter option 'colour'"},
      {"backend", "opencl", "backend=opencl; use level_zero, cuda or auto"},
      {"l0", "v3", "l0=v3; use v1, v2 or auto"},
      {"loader", "", "loader= is empty"}};
  for (const auto& [k, v, text] : bad) {
    auto a = make_ur();
    AdapterConfig c;
    c.options[k] = v;
    const Outcome o = a->init(c);
    EXPECT_EQ(o.code, Errc::invalid) << k << "=" << v << ": " << o.describe();
    EXPECT_NE(o.message.find(text), std::string::npos) << o.message;
  }
}

TEST(UrAdapter, L0ChoiceWithCudaBackendIsInvalid) {
  auto a = make_ur();
  AdapterConfig c;
  c.options["backend"] = "cuda";
  c.options["l0"] = "v2";
  const Outcome o = a->init(c);
  EXPECT_EQ(o.code, Errc::invalid) << o.describe();
}

TEST(UrAdapter, ScmTransportIsRefused) {
  auto a = make_ur();
  AdapterConfig c;
  c.transport = "scm";
  const Outcome o = a->init(c);
  EXPECT_EQ(o.code, Errc::invalid) << o.describe();
  EXPECT_NE(o.message.find("pidfd_getfd"), std::string::npos) << o.message;
}

TEST(UrAdapter, L0OptionPicksUrsAdapterVersion) {
  ::unsetenv("UR_LOADER_USE_LEVEL_ZERO_V2");
  auto a = make_ur();
  AdapterConfig c;
  c.options["loader"] = "/nonexistent/libur_loader.so.0";  // the choice is made before the load
  c.options["l0"] = "v1";
  a->init(c);
  ASSERT_NE(std::getenv("UR_LOADER_USE_LEVEL_ZERO_V2"), nullptr);
  EXPECT_STREQ(std::getenv("UR_LOADER_USE_LEVEL_ZERO_V2"), "0");
  c.options["l0"] = "v2";
  make_ur()->init(c);
  EXPECT_STREQ(std::getenv("UR_LOADER_USE_LEVEL_ZERO_V2"), "1");
  ::unsetenv("UR_LOADER_USE_LEVEL_ZERO_V2");
}

TEST(UrApi, ResultNamesAreUrs) {
  using namespace ur_api;
  EXPECT_STREQ(result_name(UR_RESULT_SUCCESS), "UR_RESULT_SUCCESS");
  EXPECT_STREQ(result_name(UR_RESULT_ERROR_INVALID_VALUE), "UR_RESULT_ERROR_INVALID_VALUE");
  EXPECT_STREQ(result_name(UR_RESULT_ERROR_UNSUPPORTED_FEATURE), "UR_RESULT_ERROR_UNSUPPORTED_FEATURE");
  EXPECT_STREQ(result_name(UR_RESULT_ERROR_UNKNOWN), "UR_RESULT_ERROR_UNKNOWN");
  EXPECT_EQ(result_name(static_cast<ur_result_t>(12345)), nullptr);
}

}  // namespace
}  // namespace ipcheck
