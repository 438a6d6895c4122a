// A small XML 1.0 well-formedness check for the JUnit output: elements nest and close,
// attributes are quoted, every & starts an entity, no character XML forbids.
#pragma once

#include <string>

namespace ipcheck::reports::testing {

// "" when well-formed; otherwise what is wrong and at which byte.
std::string xml_problem(const std::string& doc);

}  // namespace ipcheck::reports::testing
