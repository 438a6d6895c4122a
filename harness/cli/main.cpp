// The ipcheck executable: every command registered by the linked folders.
#include "ipcheck/cli.hpp"

int main(int argc, char** argv) { return ipcheck::cli::main(argc, argv); }
