// The catalog lists cases and clauses in source order (file, then line), whatever order
// their registrations ran in: a unity build or another link order runs and reports the
// same cases in the same order.
#include <algorithm>
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

}  // namespace
}  // namespace ipcheck
