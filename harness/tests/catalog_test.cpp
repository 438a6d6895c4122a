// The catalog lists cases and clauses in source order (file, then line), whatever order
// their registrations ran in: a unity build or another link order runs and reports the
// same cases in the same order.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <gtest/gtest.h>

#include "ipcheck/case.hpp"
#include "ipcheck/clause.hpp"

namespace ipcheck {
namespace {

void no_role(Role&) {}

// Registered second, from an earlier line than the registration that runs first.
void register_earlier_line() {
  CaseRegistration earlier(Case("catalog_order.earlier", "registered second, from an earlier line").hidden().role("p", no_role));
  ClauseRegistration clause({{"harness.catalog_order.earlier", Level::must, "catalog_test", "an earlier line", ""}});
}

std::ptrdiff_t case_index(const std::string& id) {
  const auto& all = cases();
  auto it = std::find_if(all.begin(), all.end(), [&](const CaseDef& c) { return c.id == id; });
  return it == all.end() ? -1 : it - all.begin();
}

std::ptrdiff_t clause_index(const std::string& id) {
  const auto& all = clauses();
  auto it = std::find_if(all.begin(), all.end(), [&](const Clause& c) { return c.id == id; });
  return it == all.end() ? -1 : it - all.begin();
}

TEST(Catalog, ListsInSourceOrderNotRegistrationOrder) {
  CaseRegistration later(Case("catalog_order.later", "registered first, from a later line").hidden().role("p", no_role));
  ClauseRegistration clause({{"harness.catalog_order.later", Level::must, "catalog_test", "a later line", ""}});
  register_earlier_line();

  const auto earlier_case = case_index("catalog_order.earlier"), later_case = case_index("catalog_order.later");
  ASSERT_GE(earlier_case, 0);
  ASSERT_GE(later_case, 0);
  EXPECT_LT(earlier_case, later_case) << "the case from the earlier line is listed first";
  const auto earlier_clause = clause_index("harness.catalog_order.earlier");
  const auto later_clause = clause_index("harness.catalog_order.later");
  ASSERT_GE(earlier_clause, 0);
  EXPECT_LT(earlier_clause, later_clause) << "the clause from the earlier line is listed first";
  // A lookup points into the list as ordered.
  const CaseDef* found = find_case("catalog_order.later");
  ASSERT_NE(found, nullptr);
  EXPECT_EQ(found, &cases()[static_cast<std::size_t>(later_case)]);
}

TEST(Catalog, CasesOfOneRegistrationKeepTheirOrder) {
  CaseRegistration many([] {
    for (const char* id : {"catalog_order.many.z", "catalog_order.many.a", "catalog_order.many.m"})
      register_case(Case(id, "one of several from one registration").hidden().role("p", no_role).def);
  });
  EXPECT_LT(case_index("catalog_order.many.z"), case_index("catalog_order.many.a"));
  EXPECT_LT(case_index("catalog_order.many.a"), case_index("catalog_order.many.m"));
}

// Read when IPCHECK_CASE is compiled.
static_assert(case_id_in_text(R"(Case("a.b", "x"))") == "a.b");
static_assert(CaseIdText<3>(std::string_view("a.b")).view() == "a.b");

TEST(Catalog, TheIdOfARegistrationIsReadFromItsText) {
  EXPECT_EQ(case_id_in_text(R"(Case("memory.roundtrip", "x").role("p", f))"), "memory.roundtrip");
  EXPECT_EQ(case_id_in_text(R"(  Case ( "a.b" , "x"))"), "a.b");
  EXPECT_EQ(case_id_in_text("register_buffers"), "");          // a function: builds several
  EXPECT_EQ(case_id_in_text(R"(Case(kId, "x"))"), "");         // not a literal
  EXPECT_EQ(case_id_in_text(R"(Case("a\"b", "x"))"), "");      // an escape: not read
  EXPECT_EQ(case_id_in_text(R"(Case("unterminated)"), "");
  EXPECT_EQ(case_id_in_text(R"(CaseX("a", "x"))"), "");
}

// A role process needs its own case only: find_case builds that one registration, not the
// catalog. Run in a fresh process (the death test's threadsafe style re-executes this
// program with this test alone), where nothing has read the catalog yet.
TEST(CatalogDeathTest, AFreshProcessBuildsOnlyTheCaseItLooksUp) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        if (catalog_built()) {
          std::fprintf(stderr, "the catalog was built before main\n");
          std::exit(1);
        }
        const CaseDef* one = find_case("selftest.pass");
        if (!one || one->id != "selftest.pass" || catalog_built()) {
          std::fprintf(stderr, "find_case built %s\n", one ? "the catalog" : "nothing");
          std::exit(2);
        }
        const std::size_t all = cases().size();  // the whole catalog now, with its own copy
        const CaseDef* again = find_case("selftest.pass");
        const bool in_list = again >= cases().data() && again < cases().data() + all;
        if (!catalog_built() || !in_list || again == one || one->id != "selftest.pass" || !find_case("selftest.fail")) {
          std::fprintf(stderr, "after cases(): built %d, in list %d\n", catalog_built(), in_list);
          std::exit(3);
        }
        if (find_case("no.such.case")) std::exit(4);
        std::exit(0);
      },
      testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace ipcheck
