// `ipcheck role`: the entry point of a role process (started by the runner, not by people).
#include "ipcheck/cli.hpp"
#include "ipcheck/role_main.hpp"

namespace ipcheck::cli {
namespace {
const CommandRegistration registered_role{{"role", "run one role of a case (internal: the runner starts it)",
                               [](const std::vector<std::string>& args) { return role_main(args); }, true}};
}  // namespace
}  // namespace ipcheck::cli
