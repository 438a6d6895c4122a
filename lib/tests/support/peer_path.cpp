// Compiled into each test executable with the path of its own ipcref_peer, so that a test
// built against ipcref_defects starts a peer built against it too.
#include "peer_process.hpp"

const char* ipcref_test::peer_executable() noexcept { return IPCREF_PEER_PATH; }
