// The ipcheck executable: every command registered by the linked folders.
#include "ipcheck/cli.hpp"

#include "ipcheck/spawn.hpp"

int main(int argc, char** argv) {
#ifdef IPCHECK_ROLE_PROGRAM
  ipcheck::set_role_program(IPCHECK_ROLE_PROGRAM);
#endif
  return ipcheck::cli::main(argc, argv);
}
