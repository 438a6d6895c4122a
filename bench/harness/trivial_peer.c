/* The trivial role of the harness floor: what a process pair must do at the least to run a
 * two-role case. Descriptor 3 is a SOCK_SEQPACKET socket to the parent. Role "a" says
 * hello, waits for start, sends data and waits for its answer; role "b" says hello, waits
 * for start, waits for data and answers it. Both say done and exit. Plain C and libc only:
 * the floor is the price of fork + exec + the handshake, not of a C++ runtime. */
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static int say(const char* word) { return send(3, word, strlen(word), MSG_NOSIGNAL) < 0 ? -1 : 0; }

static int expect(const char* word) {
  char buf[64];
  ssize_t n = recv(3, buf, sizeof buf, 0);
  return n == (ssize_t)strlen(word) && memcmp(buf, word, (size_t)n) == 0 ? 0 : -1;
}

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  const int a = strcmp(argv[1], "a") == 0;
  if (say("hello") || expect("start")) return 1;
  if (a ? say("data") || expect("ok") : expect("data") || say("ok")) return 1;
  return say("done") ? 1 : 0;
}
