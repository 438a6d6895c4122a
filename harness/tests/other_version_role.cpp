// A role process of another ipcheck build, for the parents' version check: started as
// `<this> role --case C --role R --adapter A` (or `fuzz-role --role R ...`), it says hello as
// protocol version kProtocolVersion + 1, or, with IPCHECK_TEST_HELLO=unversioned, as an
// ipcheck from before versioned hellos (name, pid, mark), then waits until its parent ends it.
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "ipcheck/messages.hpp"

int main(int argc, char** argv) {
  using namespace ipcheck;
  std::string role = "role";
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], "--role") == 0) role = argv[i + 1];
  Channel ch{unique_fd(3)};
  const char* mode = std::getenv("IPCHECK_TEST_HELLO");
  if (mode && std::strcmp(mode, "unversioned") == 0) {
    Message old;
    old.type = MsgType::hello;
    old.fields = {role, std::to_string(::getpid()), "0x0"};
    if (!ch.send(old)) return 3;
  } else if (!ch.send(msg::Hello{msg::kProtocolVersion + 1, role, ::getpid(), ""})) {
    return 3;
  }
  try {
    for (;;) ch.receive(-1);
  } catch (const ChannelError&) {
    return 0;  // the parent closed the channel
  }
}
