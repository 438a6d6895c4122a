// ipcheck-bench-ipc: one adapter's IPC verbs, each beside its floor (floor.hpp), measured
// with Google Benchmark across two processes. `ipcheck bench` starts it twice (fork +
// exec), as a pair joined by a SOCK_SEQPACKET socket on descriptor 3 (what they say to each
// other: peer_messages.hpp):
//
//   ipcheck-bench-ipc --role producer --adapter A [--transport T] [--adapter-opt K=V]...
//   ipcheck-bench-ipc --role consumer --adapter A [...] [Google Benchmark flags]
//   ipcheck-bench-count --out TRACE -- ipcheck-bench-ipc --role consumer --adapter A [...]
//                       --counts NAMES [--counts-filter REGEX]     (the count gate: no timing)
//
// The producer allocates and exports memory, physical memory and two events, and echoes
// event pings; the consumer opens what it was sent and runs every benchmark. Neither
// process forks, so a GPU runtime is initialised only in processes that never fork.
//
// Benchmarks, for each size (4KiB, 2MiB, 64MiB) and named "<adapter>/<verb>/<size>":
//   mem_get, mem_put          the producer-side verbs, on an allocation of the consumer
//   mem_open, mem_close       each timed alone (the other verb untimed)
//   mem_open_repeat           an open of an export this process holds open already
//   mem_open_close            the pair (its goal for ref: bench/goals.md)
//   mem_first_touch           one access per page of a fresh mapping (open, close untimed)
//   phys_open_map             physical open + reserve + map + unmap + free + close
// and "<adapter>/event_signal_wake": a ping-pong across the processes, per round trip.
// Each has "<adapter>/floor/<verb>/<size>" beside it; the label names the floor.
//
// This file holds the command line, the producer and main; the consumer is
// ipc_bench_consumer.cpp's (its set-up; ipc_bench_timed.cpp and ipc_bench_counted.cpp its
// two phases, ipc_bench_consumer.hpp what they share), and ipc_bench.hpp what both share.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <deque>
#include <optional>

#include "ipc_bench.hpp"
#include "peer_messages.hpp"
#include "ipcheck/adapter.hpp"
#include "ipcheck/channel.hpp"
#include "ipcheck/owned.hpp"

namespace ipcheck::bench {

std::unique_ptr<Adapter> start_adapter(const Args& args, std::string& why) {
  const AdapterDesc* d = find_adapter(args.adapter);
  if (!d) {
    why = "unknown adapter '" + args.adapter + "'; 'ipcheck list --adapters' shows them";
    return nullptr;
  }
  auto a = d->create();
  AdapterConfig c;
  c.transport = args.transport;
  c.options = args.options;
  c.runner_pid = ::getppid();  // `ipcheck bench`: both processes descend from it
  if (Outcome o = a->init(c); !o.ok()) {
    why = "adapter '" + args.adapter + "' is not available: " + o.describe();
    return nullptr;
  }
  return a;
}

namespace {

using ipcref::unique_fd;

constexpr auto kEchoWait = std::chrono::seconds(30);

Args parse_args(int argc, char** argv) {
  Args a;
  a.rest.push_back(argv[0]);
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    const bool has_value = i + 1 < argc;
    if (k == "--role" && has_value) a.role = argv[++i];
    else if (k == "--adapter" && has_value) a.adapter = argv[++i];
    else if (k == "--transport" && has_value) a.transport = argv[++i];
    else if (k == "--counts" && has_value) a.counts = argv[++i];
    else if (k == "--counts-filter" && has_value) a.counts_filter = argv[++i];
    else if (k == "--adapter-opt" && has_value) {
      const std::string kv = argv[++i];
      const auto eq = kv.find('=');
      a.options[kv.substr(0, eq)] = eq == std::string::npos ? "" : kv.substr(eq + 1);
    } else {
      a.rest.push_back(argv[i]);
    }
  }
  return a;
}

std::vector<std::byte> fill_pattern(std::size_t bytes) { return std::vector<std::byte>(bytes, std::byte{0xa5}); }

// ---------------------------------------------------------------- producer

class Producer {
 public:
  Producer(Channel& ch, Adapter& a) : ch_(ch), a_(a) {}
  ~Producer() {
    while (!owned_.empty()) owned_.pop_back();  // exports before the objects they export
  }

  void setup() {
    const auto chunk = fill_pattern(1u << 20);
    for (std::size_t size : kSizes) {
      auto p = a_.alloc(0, size, MemKind::device);
      if (!p.ok()) throw ChannelError("alloc(" + size_name(size) + "): " + p.outcome.describe());
      owned_.push_back(Owned::allocation(a_, p.value));
      // The exporter wrote its memory: the consumer's first touch finds pages that exist.
      for (std::size_t at = 0; at < size; at += chunk.size()) {
        const std::size_t n = std::min(chunk.size(), size - at);
        if (Outcome o = a_.write(p.value + at, std::span(chunk.data(), n)); !o.ok())
          throw ChannelError("write: " + o.describe());
      }
      auto e = a_.mem_get(p.value);
      if (!e.ok()) throw ChannelError("mem_get(" + size_name(size) + "): " + e.outcome.describe());
      owned_.push_back(Owned::mem_export(a_, e.value.id));
      send(ch_, wire::MemExport{size, e.value.bytes, CarriedFd::lend(e.value.fd)});
    }
    const std::size_t granularity = a_.phys_granularity(0);
    for (std::size_t size : kSizes) {
      const std::string name = "phys_open_map/" + size_name(size);
      if (granularity == 0 || size % granularity != 0) {
        send(ch_, wire::Skip{name, size_name(size) + " is not a multiple of the physical granularity (" +
                                       std::to_string(granularity) + " bytes)"});
        continue;
      }
      auto pm = a_.phys_create(0, size, true);
      if (!pm.ok()) {
        send(ch_, wire::Skip{name, "phys_create: " + pm.outcome.describe()});
        continue;
      }
      owned_.push_back(Owned::physical(a_, pm.value));
      auto e = a_.phys_get(pm.value);
      if (!e.ok()) {
        send(ch_, wire::Skip{name, "phys_get: " + e.outcome.describe()});
        continue;
      }
      owned_.push_back(Owned::phys_export(a_, e.value.id));
      send(ch_, wire::PhysExport{size, e.value.bytes, CarriedFd::lend(e.value.fd)});
    }
    for (const char* which : {"ping", "pong"}) {
      auto ev = a_.event_create(0, EventFlags{true, false});
      if (!ev.ok()) {
        send(ch_, wire::Skip{"event_signal_wake", "event_create(ipc): " + ev.outcome.describe()});
        break;
      }
      owned_.push_back(Owned::event(a_, ev.value));
      auto e = a_.event_get(ev.value);
      if (!e.ok()) {
        send(ch_, wire::Skip{"event_signal_wake", "event_get: " + e.outcome.describe()});
        break;
      }
      owned_.push_back(Owned::event_export(a_, e.value.id));
      (std::string(which) == "ping" ? ping_ : pong_) = ev.value;
      send(ch_, wire::EventExport{std::string(which) == "ping", e.value.bytes, CarriedFd::lend(e.value.fd)});
    }
    control_fd_.reset(::memfd_create("ipcheck-bench-control", MFD_CLOEXEC));
    if (!control_fd_ || ::ftruncate(control_fd_.get(), 4096) != 0)
      throw ChannelError(std::string("memfd for the control page: ") + std::strerror(errno));
    void* page = ::mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, control_fd_.get(), 0);
    if (page == MAP_FAILED) throw ChannelError(std::string("mmap of the control page: ") + std::strerror(errno));
    control_ = static_cast<Control*>(page);
    send(ch_, wire::Control{CarriedFd::lend(control_fd_.get())});
    send(ch_, wire::Ready{});
  }

  // Answers the consumer until it says quit or goes away.
  void serve() {
    for (;;) {
      std::optional<Message> m;
      try {
        m = ch_.receive(-1);
      } catch (const ChannelError&) {
        return;  // the consumer ended
      }
      if (!m || m->type != MsgType::data) continue;
      const wire::Any said = wire::decode(*m);
      if (std::holds_alternative<wire::Quit>(said)) return;
      if (const auto* echo = std::get_if<wire::Echo>(&said)) send(ch_, wire::Echoed{echo->floor ? echo_floor() : echo_adapter()});
    }
  }

 private:
  std::string echo_adapter() {
    for (;;) {
      auto w = a_.event_wait(ping_, kEchoWait);
      if (!w.ok()) return "event_wait: " + w.outcome.describe();
      if (!w.value) return "no ping within 30 s";
      if (Outcome o = a_.event_reset(ping_); !o.ok()) return "event_reset: " + o.describe();
      if (control_->stop.load(std::memory_order_acquire)) return "";
      if (Outcome o = a_.event_signal(pong_); !o.ok()) return "event_signal: " + o.describe();
    }
  }

  std::string echo_floor() {
    for (;;) {
      if (!futex_wait_set(&control_->ping, std::chrono::seconds(30))) return "no ping within 30 s";
      control_->ping.store(0, std::memory_order_relaxed);
      if (control_->stop.load(std::memory_order_acquire)) return "";
      futex_set_wake(&control_->pong);
    }
  }

  Channel& ch_;
  Adapter& a_;
  std::deque<Owned> owned_;
  ObjectId ping_ = 0, pong_ = 0;
  unique_fd control_fd_;
  Control* control_ = nullptr;
};

int run_producer(const Args& args) {
  Channel ch{unique_fd(kPeerFd)};
  std::string why;
  auto a = start_adapter(args, why);
  if (!a) {
    std::fprintf(stderr, "ipcheck-bench-ipc producer: %s\n", why.c_str());
    ch.send(wire::Error{why});
    return 1;
  }
  try {
    Producer p(ch, *a);
    p.setup();
    p.serve();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ipcheck-bench-ipc producer: %s\n", e.what());
    ch.send(wire::Error{std::string("producer: ") + e.what()});
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace ipcheck::bench

int main(int argc, char** argv) {
  using namespace ipcheck::bench;
  Args args = parse_args(argc, argv);
  if (::fcntl(kPeerFd, F_GETFD) < 0) {
    std::fprintf(stderr,
                 "ipcheck-bench-ipc: descriptor 3 is not open: this program runs as a producer and consumer pair "
                 "that `ipcheck bench --adapter %s` starts; run that instead\n",
                 args.adapter.c_str());
    return 2;
  }
  if (args.role == "producer") return run_producer(args);
  if (args.role == "consumer") return run_consumer(args);
  std::fprintf(stderr, "ipcheck-bench-ipc: --role is '%s'; use producer or consumer (ipcheck bench starts both)\n",
               args.role.c_str());
  return 2;
}
