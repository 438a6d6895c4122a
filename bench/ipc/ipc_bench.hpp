// What the two processes of ipcheck-bench-ipc share (ipc_bench.cpp: the command line, the
// producer and main; ipc_bench_consumer.cpp with ipc_bench_timed.cpp and ipc_bench_counted.cpp:
// the consumer): the socket's descriptor, the sizes, the command line, the control page and
// its futex words, the adapter's start. Private to bench/ipc.
#pragma once

#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ipcheck/adapter.hpp"
#include "ipcheck/channel.hpp"

namespace ipcheck::bench {

using Clock = std::chrono::steady_clock;

inline constexpr int kPeerFd = 3;
inline constexpr std::size_t kSizes[] = {4096, 2u << 20, 64u << 20};

inline std::string size_name(std::size_t bytes) {
  if (bytes % (1u << 20) == 0) return std::to_string(bytes >> 20) + "MiB";
  return std::to_string(bytes >> 10) + "KiB";
}

inline double seconds(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

struct Args {
  std::string role;
  std::string adapter = "ref";
  std::string transport = "auto";
  std::map<std::string, std::string> options;
  // --counts FILE: no Google Benchmark; each gated figure and its floor run a few times
  // between count markers, under ipcheck-bench-count (count_tracer.c), which counts them;
  // FILE gets the figures' names and region ids. --counts-filter: which figures (a regex).
  std::string counts;
  std::string counts_filter;
  std::vector<char*> rest;  // for Google Benchmark, argv[0] first
};

// The page both processes map: the raw futex words of the event floor and the flag that
// ends an echo loop.
struct Control {
  std::atomic<std::uint32_t> ping;
  std::atomic<std::uint32_t> pong;
  std::atomic<std::uint32_t> stop;
};

inline long futex(std::atomic<std::uint32_t>* word, int op, std::uint32_t value, const timespec* timeout = nullptr) {
  return ::syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(word), op, value, timeout, nullptr, 0);
}

// Waits until *word is non-zero; false after `limit` without it.
inline bool futex_wait_set(std::atomic<std::uint32_t>* word, std::chrono::seconds limit) {
  const auto deadline = Clock::now() + limit;
  const timespec slice{1, 0};
  while (word->load(std::memory_order_acquire) == 0) {
    futex(word, FUTEX_WAIT, 0, &slice);
    if (Clock::now() > deadline) return false;
  }
  return true;
}

inline void futex_set_wake(std::atomic<std::uint32_t>* word) {
  word->store(1, std::memory_order_release);
  futex(word, FUTEX_WAKE, 1);
}

// The adapter `args` names, initialised; null, and why, when it cannot start.
std::unique_ptr<Adapter> start_adapter(const Args& args, std::string& why);

template <class T>
void send(Channel& ch, const T& m) {
  if (!ch.send(m)) throw ChannelError("the peer process is gone");
}

// The consumer process (ipc_bench_consumer.cpp): its exit status.
int run_consumer(Args& args);

}  // namespace ipcheck::bench
