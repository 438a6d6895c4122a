// The sycl adapter without a release loaded: its registration, init's answers for a release
// that is not installed and for bad options, the role program its runtime needs, and the
// declarations' tables.
#include <gtest/gtest.h>

#include <cstring>
#include <set>
#include <string>

#include "ipcheck/adapter.hpp"
#include "ipcheck/spawn.hpp"
#include "ipcheck/sycl/sycl_api.hpp"

namespace ipcheck {
namespace {

std::unique_ptr<Adapter> make_sycl() {
  const AdapterDesc* d = find_adapter("sycl");
  EXPECT_NE(d, nullptr);
  return d->create();
}

TEST(SyclAdapter, ClaimsSyclAndNeedsTheSharedCxxRuntime) {
  const AdapterDesc* d = find_adapter("sycl");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->profiles, (std::vector<std::string>{"sycl"}));
  EXPECT_EQ(d->options, (std::vector<std::string>{"release", "l0"}));
  // A release names libraries to load: from the command line only.
  EXPECT_EQ(d->path_options, (std::vector<std::string>{"release"}));
  // libsycl throws through the shared libstdc++: its roles must not have their own copy.
  EXPECT_TRUE(d->shared_cxx_runtime);
  EXPECT_FALSE(find_adapter("ref")->shared_cxx_runtime);
  EXPECT_EQ(d->check_value("l0", "v3"), "use v1, v2 or auto");
}

TEST(SyclAdapter, ReleaseNotInstalledIsNotImplementedAndNamesTheFix) {
  auto a = make_sycl();
  AdapterConfig c;
  c.options["release"] = "1999.0.0";
  const Outcome o = a->init(c);
  EXPECT_EQ(o.code, Errc::not_implemented) << o.describe();
  EXPECT_EQ(o.by, Decided::adapter);
  EXPECT_NE(o.message.find("no installed oneAPI release '1999.0.0'"), std::string::npos) << o.message;
  EXPECT_NE(o.message.find("ci/oneapi-stack"), std::string::npos) << o.message;
}

TEST(SyclAdapter, BadOptionsAreInvalid) {
  for (const auto& [k, v] : std::vector<std::pair<std::string, std::string>>{{"l0", "v3"}, {"loader", "x"}, {"release", ""}}) {
    auto a = make_sycl();
    AdapterConfig c;
    c.options[k] = v;
    const Outcome o = a->init(c);
    EXPECT_EQ(o.code, Errc::invalid) << k << "=" << v << ": " << o.describe();
  }
  auto a = make_sycl();
  AdapterConfig c;
  c.transport = "scm";
  EXPECT_EQ(a->init(c).code, Errc::invalid);
}

TEST(SyclAdapter, DeclarationsAreWholeAndDistinct) {
  using namespace sycl_api;
  std::set<std::string> mangled, members;
  for (std::size_t i = 0; i < kExportCount; ++i) {
    EXPECT_EQ(std::strncmp(kExports[i].mangled, "_ZN", 3) == 0 || std::strncmp(kExports[i].mangled, "_ZNK", 4) == 0, true)
        << kExports[i].mangled;
    EXPECT_TRUE(mangled.insert(kExports[i].mangled).second) << kExports[i].mangled;
    EXPECT_TRUE(members.insert(kExports[i].member).second) << kExports[i].member;
    EXPECT_NE(std::strstr(kExports[i].demangled, "sycl::_V1::"), nullptr) << kExports[i].demangled;
  }
  EXPECT_EQ(kExportCount, 25u);
  EXPECT_STREQ(errc_name(8), "invalid");
  EXPECT_STREQ(errc_name(12), "feature_not_supported");
  EXPECT_EQ(errc_name(99), nullptr);
}

}  // namespace
}  // namespace ipcheck
