// A consumer worker of a fuzz campaign (`ipcheck fuzz-role --role consumer`; roles.cpp holds
// the command). It adds its own export and decoy to the producer's set-up (so that pid swaps
// can name the importer itself), calibrates on the unchanged handles, says ready and waits
// for a slot; then it opens mutated handles as fast as it can, judging each with the oracle,
// and writes every input to its worker page before trying it (or replays the parent's inputs).
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "ipcheck/fuzz/symbolic.hpp"
#include "roles_impl.hpp"

namespace ipcheck::fuzz::detail {

using nlohmann::json;

namespace {

// Digits and hex runs vary between runs of the same check; the rest names the check.
std::uint64_t message_shape(Errc code, long long native, const std::string& message) {
  std::uint64_t h = 0xcbf29ce484222325ull ^ (static_cast<std::uint64_t>(code) << 32) ^ static_cast<std::uint64_t>(native);
  bool in_number = false;
  for (std::size_t i = 0; i < message.size(); ++i) {
    const char c = message[i];
    const bool digit = (c >= '0' && c <= '9') || (in_number && ((c >= 'a' && c <= 'f') || c == 'x'));
    if (digit && in_number) continue;
    in_number = digit;
    h = (h ^ static_cast<unsigned char>(digit ? '#' : c)) * 0x100000001b3ull;
  }
  return h;
}

struct PageMapping {
  void* p = MAP_FAILED;
  ~PageMapping() {
    if (p != MAP_FAILED) ::munmap(p, 4096);
  }
};

}  // namespace

void Consumer::setup() {
  adapter_ = make_adapter(start_);
  target_ = start_.value("target", "memory");
  const json& setup = start_.at("setup");
  const std::uint64_t salt = start_.at("salt_seed").get<std::uint64_t>() ^ 0x5a5a;
  if (target_ == "physical")
    detail::build_physical_setup(*adapter_, detail::consumer_phys_setup(), "worker", salt, own_);
  else if (target_ == "event")
    detail::build_event_setup(*adapter_, detail::consumer_event_setup(), "worker", false, own_);
  else
    build_setup(*adapter_, consumer_setup(), "worker", salt, own_);
  const AdapterInfo info = adapter_->info();
  const auto& exports = setup.at("exports");
  if (exports.empty()) throw RoleFailure("setup", Outcome::failure(Errc::invalid, "the producer exported nothing"));
  const std::size_t handle_bytes = from_hex(exports[0].at("hex").get<std::string>()).size();
  ctx_.layout = &layout_for(info.layout_of(target_), handle_bytes);
  ctx_.page_size = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
  ctx_.descriptors = !descriptors_.empty();
  auto add_base = [&](const std::string& name, const std::vector<std::byte>& bytes, int fd) {
    Input in;
    std::copy_n(bytes.begin(), std::min(bytes.size(), kMaxInput), in.bytes.begin());
    in.length = static_cast<std::uint16_t>(std::min(bytes.size(), kMaxInput));
    in.base = static_cast<std::uint16_t>(ctx_.bases.size());
    in.descriptor = ctx_.descriptors ? static_cast<std::int16_t>(in.base) : static_cast<std::int16_t>(kNoDescriptor);
    ctx_.bases.push_back(in);
    ctx_.base_names.push_back(name);
    base_fds_.push_back(fd);
  };
  for (const char* group : {"exports", "revoked"})
    for (const auto& e : setup.at(group)) {
      const std::string name = e.at("name").get<std::string>();
      auto it = descriptors_.find(name);
      add_base(name, from_hex(e.at("hex").get<std::string>()), it == descriptors_.end() ? -1 : it->second.get());
    }
  for (std::size_t i = 0; i < own_.exported.size(); ++i) add_base(own_.export_names[i], own_.exported[i].bytes, own_.exported[i].fd);
  if (ctx_.descriptors)
    for (std::size_t i = 0; i < ctx_.bases.size(); ++i)
      if (base_fds_[i] < 0) ctx_.bases[i].descriptor = kNoDescriptor;
  for (const auto& v : setup.at("values")) ctx_.values.push_back(detail::value_from_json(v));
  if (auto it = start_.find("values"); it != start_.end())
    for (const auto& v : *it) ctx_.values.push_back(detail::value_from_json(v));
  ctx_.values.push_back({"worker.pid", FieldRole::pid, static_cast<std::uint64_t>(::getpid())});
  for (const auto& v : own_.fds) ctx_.values.push_back(v);
  ctx_.values.push_back({"worker.page_fd", FieldRole::fd, static_cast<std::uint64_t>(page_fd_.get())});
  ctx_.values.push_back({"worker.channel_fd", FieldRole::fd, static_cast<std::uint64_t>(ch_.fd())});
  table_ = detail::table_from_json(setup.at("allocs"));
  table_.insert(table_.end(), own_.table.begin(), own_.table.end());
  reader_ = std::make_unique<AdapterReader>(*adapter_);
  claimed_size_field_ = ctx_.layout->find(FieldRole::size);
  host_mappings_ = info.opened_memory_is_host_mapping;
  if (target_ == "physical") setup_physical();
  if (target_ == "event") setup_event();
}

// The event oracle. Own events are told apart by signalling and resetting each; an adapter
// without reset leaves that out, and the campaign says so.
void Consumer::setup_event() {
  events_.adapter = adapter_.get();
  events_.ctx = &ctx_;
  events_.producer = std::span<const CanaryAlloc>(table_).first(table_.size() - own_.table.size());
  events_.own_table = own_.table;
  for (const Owned& ev : own_.allocations) events_.own.push_back(ev.get());
  if (events_.own.empty()) return;
  events_.owner_ends = !adapter_->info().any_process_ends_pending_event;
  const Outcome reset = adapter_->event_reset(events_.own.front());
  if (!reset.ok()) {
    events_.toggles = false;
    event_identity_ = "an unsignaled open that derives from the worker's own export is not judged further: event_reset of " +
                      own_.table.front().name + " answered " + reset.describe() +
                      ", so the worker cannot signal its own events one at a time to tell which one an open gave";
  }
}

// The physical oracle, and each base's object size (from the layout's size field) for the
// map ranges the mutator draws.
void Consumer::setup_physical() {
  ctx_.map_granularity = adapter_->phys_granularity(0);
  for (const Input& b : ctx_.bases)
    ctx_.map_sizes.push_back(claimed_size_field_ >= 0 && b.length >= ctx_.layout->size ? ctx_.layout->get(b.bytes, claimed_size_field_) : 0);
  phys_.adapter = adapter_.get();
  phys_.ctx = &ctx_;
  phys_.table = table_;
  phys_.reader = reader_.get();
  phys_.scratch = &scratch_;
  phys_.host_mappings = host_mappings_;
  phys_.granularity = ctx_.map_granularity;
}

// After an open that succeeded (its mapping read, closed): can this process still use the
// runtime? A read of the worker's own allocation answers; a poisoned context fails it.
// Where the adapter has a cheaper check (native "context_check"), it answers instead.
std::optional<Outcome> Consumer::context_health() {
  if (own_.allocations.empty() || target_ != "memory") return std::nullopt;
  if (context_check_) {
    Outcome o = adapter_->native("context_check", {});
    if (o.ok()) return std::nullopt;
    if (o.code != Errc::not_implemented) return o;
    context_check_ = false;
  }
  std::array<std::byte, 8> b{};
  Outcome o = adapter_->read(own_.allocations.front().get(), b);
  if (o.ok()) return std::nullopt;
  return o;
}

Consumer::Executed Consumer::execute(const Input& in) {
  const int fd = in.descriptor >= 0 ? base_fds_[static_cast<std::size_t>(in.descriptor)]
                 : in.descriptor == kForeignDescriptor ? page_fd_.get() : -1;
  Executed e;
  if (target_ == "physical" || target_ == "event") {
    e = target_ == "event" ? detail::execute_event(events_, in, fd, page_->ns) : detail::execute_physical(phys_, in, fd, page_->ns);
    if (e.verdict == Verdict::context_lost) retire_ = true;
  } else {
    e = execute_memory(in, fd);
  }
  const std::uint64_t t = now_ns();
  // A descriptor the verb left behind takes the lowest free number.
  const int floor = lowest_free_fd();
  if (floor > fd_floor_ && !is_finding(e.verdict)) {
    e.verdict = Verdict::fd_leak;
    e.detail = std::string("descriptor ") + std::to_string(fd_floor_) + " was left open by " +
               (e.outcome.ok() ? "open and close" : "a failed open (" + e.outcome.describe() + ")");
  }
  fd_floor_ = floor;
  spent(page_->ns.oracle, t);
  return e;
}

Consumer::Executed Consumer::execute_memory(const Input& in, int fd) {
  Executed e;
  std::uint64_t t = now_ns();
  Result<DevPtr> r = adapter_->mem_open(in.data(), fd, 0);
  t = spent(page_->ns.open, t);
  if (!r.ok() && r.outcome.code == Errc::device_lost) {
    // Sticky: every later call would fail the same way. Usually the probe below caught the
    // input that did it; when not, this one names the symptom, and the worker is replaced.
    e.verdict = Verdict::context_lost;
    e.detail = "open answered " + r.outcome.describe() +
               ": the process's context is lost, by this input or by an earlier one whose damage showed "
               "only now; the worker is replaced";
    e.outcome = std::move(r.outcome);
    retire_ = true;
  } else if (!r.ok()) {
    e.verdict = Verdict::rejected;
    e.outcome = std::move(r.outcome);
  } else {
    std::optional<std::uint64_t> claimed;
    if (claimed_size_field_ >= 0 && in.length >= ctx_.layout->size) claimed = ctx_.layout->get(in.bytes, claimed_size_field_);
    const Judgement j = judge_mapping(table_, r.value, claimed, *reader_, scratch_);
    e.verdict = j.verdict;
    e.detail = j.detail;
    t = spent(page_->ns.oracle, t);
    const Outcome closed = adapter_->mem_close(r.value);
    t = spent(page_->ns.close, t);
    // Only a clean mapping is judged further (a mapped verdict read the whole export: the
    // mapping was there before close).
    if (e.verdict == Verdict::mapped) {
      std::array<std::byte, 1> probe{};
      if (!closed.ok()) {
        e.verdict = Verdict::close_failed;
        e.detail = "close of the mapping open returned failed: " + closed.describe();
      } else if (host_mappings_ && host_mapped(r.value)) {
        e.verdict = Verdict::mapping_leak;
        e.detail = "the mapping at " + hexnum(r.value) + " is still mapped after close";
      } else if (!host_mappings_ && adapter_->read(r.value, probe).ok()) {
        // Device address space stays reserved after close; that the runtime still copies
        // from it is what a leaked mapping looks like there.
        e.verdict = Verdict::mapping_leak;
        e.detail = "the runtime still reads the mapping at " + hexnum(r.value) + " after close";
      }
    }
    // A host mapping is read by the host, never through a runtime context that could be
    // lost; only device memory needs the probe.
    std::optional<Outcome> lost;
    if (!host_mappings_) lost = context_health();
    if (lost) {
      const std::string before = is_finding(e.verdict) ? std::string(verdict_name(e.verdict)) + ": " + e.detail
                                                       : std::string("a clean open and close");
      e.verdict = Verdict::context_lost;
      e.detail = "after this input (" + before + "), " +
                 (context_check_ ? "the context check" : "a read of the worker's own allocation") + " answered " +
                 lost->describe() + ": the process's context is lost; the worker is replaced";
      e.outcome = *lost;
      retire_ = true;
    }
  }
  spent(page_->ns.oracle, t);
  return e;
}

// One input through the worker page: the parent still has it if the open kills or hangs us.
Consumer::Executed Consumer::run_one(const Input& in, std::uint64_t flight) {
  page_->length = in.length;
  page_->base = in.base;
  page_->descriptor = in.descriptor;
  page_->map_offset = in.map_offset;
  page_->map_size = in.map_size;
  std::memcpy(page_->bytes, in.bytes.data(), kMaxInput);
  page_->in_flight.store(flight, std::memory_order_release);
  const std::uint64_t t = now_ns();
  Executed e = execute(in);
  page_->verdict_ns[static_cast<int>(e.verdict) & 15].fetch_add(now_ns() - t, std::memory_order_relaxed);
  count(e);
  page_->in_flight.store(0, std::memory_order_release);
  page_->executions.fetch_add(1, std::memory_order_release);
  return e;
}

void Consumer::count(const Executed& e) {
  const Outcome& o = e.outcome;
  page_->verdicts[static_cast<int>(e.verdict) & 15].fetch_add(1, std::memory_order_relaxed);
  page_->outcomes[static_cast<int>(o.code) & 15].fetch_add(1, std::memory_order_relaxed);
  for (auto& s : page_->natives) {
    if (s.used && s.errc == static_cast<int>(o.code) && s.native == o.native) {
      s.count.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    if (!s.used) {
      s.errc = static_cast<int>(o.code);
      s.native = o.native;
      std::snprintf(s.name, sizeof s.name, "%s", o.native_name.empty() ? errc_name(o.code) : o.native_name.c_str());
      s.count.store(1, std::memory_order_relaxed);
      std::atomic_thread_fence(std::memory_order_release);
      s.used = 1;
      return;
    }
  }
}

void Consumer::record(const Input& in, const Executed& e, std::uint64_t exec) {
  if (is_finding(e.verdict)) {
    page_->findings.fetch_add(1, std::memory_order_relaxed);
    // One message per kind of finding and set of changed fields is plenty; the parent dedups again.
    const std::string key = std::string(verdict_name(e.verdict)) + ":" + std::to_string(changed_fields(ctx_, in));
    if (finding_keys_[key]++ < 2 && findings_sent_ < 500) {
      ++findings_sent_;
      const std::uint64_t t = now_ns();
      ch_.send(wire::encode(wire::Finding{exec, e.verdict, e.detail, in, outcome_json(e.outcome)}, ctx_));
      spent(page_->ns.channel, t);
    }
    return;
  }
  // An outcome not seen before (by code and message shape) makes the input a corpus entry.
  const std::uint64_t shape = message_shape(e.outcome.code, e.outcome.native, e.outcome.message) ^ static_cast<std::uint64_t>(e.verdict);
  if (!shapes_.insert(shape).second) return;
  if (corpus_.size() < 512) corpus_.push_back(in);
  if (corpus_sent_++ < 256) {
    const std::uint64_t t = now_ns();
    ch_.send(wire::encode(wire::Corpus{in, e.verdict, outcome_json(e.outcome)}, ctx_));
    spent(page_->ns.channel, t);
  }
}

wire::Final Consumer::final_audit() {
  return {diff_snapshots(before_, take_proc_snapshot()), page_->executions.load()};
}

// The parent's list of demoted classes (changed-field names and rates), whole, in its order.
void Consumer::take_schedule(const std::vector<wire::Demotion>& classes) {
  schedule_.clear();
  keep_.clear();
  for (const auto& c : classes) {
    if (schedule_.size() >= static_cast<std::size_t>(detail::kMaxSchedule)) break;
    schedule_.push_back(changed_fields_mask(*ctx_.layout, c.cls));
    keep_.push_back(c.keep_one_in);
  }
}

// True when `in` repeats a demoted class (changes at least its fields) and is not the one draw
// in the class's keep_one_in that still runs; counted per class on the page.
bool Consumer::demoted(const Input& in, Rng& rng) {
  if (schedule_.empty()) return false;
  const std::uint64_t mask = changed_fields(ctx_, in);
  for (std::size_t k = 0; k < schedule_.size(); ++k)
    if (schedule_[k] != 0 && (mask & schedule_[k]) == schedule_[k]) {
      if (rng.below(keep_[k]) == 0) return false;
      page_->demoted[k].fetch_add(1, std::memory_order_relaxed);
      return true;
    }
  return false;
}

// A set-up consumer waits here until the parent gives it a slot (its page, the input stream
// to run) or lets it go; false: let go, or the parent is gone.
bool Consumer::wait_for_go() {
  for (;;) {
    std::optional<Message> m;
    try {
      m = ch_.receive(-1);
    } catch (const ChannelError&) {
      return false;
    }
    if (!m) continue;
    if (m->type == MsgType::release) return false;
    if (m->type != MsgType::data) continue;
    wire::Any said = wire::decode(*m, &ctx_);
    auto* go = std::get_if<wire::Go>(&said);
    if (!go) continue;
    // The page takes the placeholder's descriptor number: the mutator context already names it.
    if (::dup3(go->page.get(), page_fd_.get(), O_CLOEXEC) < 0)
      throw std::runtime_error(std::string("cannot take the worker page: ") + std::strerror(errno));
    go->page = CarriedFd();
    take_schedule(go->schedule);
    go_ = std::move(*go);
    return true;
  }
}

// What the parent said since the last look, without waiting: a Schedule is taken here.
Consumer::Parent Consumer::read_parent() {
  bool stop = false;
  for (;;) {
    std::optional<Message> m;
    try {
      m = ch_.receive(0);
    } catch (const ChannelError&) {
      return Parent::gone;
    }
    if (!m) return stop ? Parent::stop : Parent::go_on;
    if (m->type == MsgType::release) {
      stop = true;
    } else if (m->type == MsgType::data) {
      wire::Any said = wire::decode(*m, &ctx_);
      if (const auto* s = std::get_if<wire::Schedule>(&said)) take_schedule(s->classes);
    }
  }
}

int Consumer::campaign() {
  const std::uint64_t seed = go_.seed;
  const std::uint64_t first = go_.first_exec;
  const std::uint64_t quota = go_.quota;  // 0: until told to stop
  Mutator mutator(ctx_);
  Input in;
  for (std::uint64_t i = first; quota == 0 || i < first + quota; ++i) {
    if ((i & 255) == 0) {
      const Parent said = read_parent();
      if (said == Parent::gone) return 3;
      if (said == Parent::stop) break;
    }
    const std::uint64_t t = now_ns();
    Rng rng(derive_seed(seed, i));
    // An input of a demoted class (one that already poisoned a worker) is mostly redrawn.
    for (int draw = 0; draw < 8; ++draw) {
      const bool from_corpus = !corpus_.empty() && rng.chance(1, 4);
      const Input& start = from_corpus ? corpus_[rng.below(corpus_.size())] : ctx_.bases[rng.below(ctx_.bases.size())];
      mutator.mutate(rng, start, in);
      if (!demoted(in, rng)) break;
    }
    spent(page_->ns.mutate, t);
    const Executed e = run_one(in, i + 1);
    record(in, e, i);
    if (retire_) {
      // The parent hands the slot to a standby now, not after this process's exit (tearing a
      // CUDA context down takes tens of milliseconds). No final audit: a lost context's state says nothing.
      ch_.send(wire::Retire{i + 1});
      return detail::kRetired;
    }
  }
  ch_.send(final_audit());
  return 0;
}

int Consumer::replay() {
  for (;;) {
    std::optional<Message> m;
    try {
      m = ch_.receive(-1);
    } catch (const ChannelError&) {
      return 3;
    }
    if (!m) continue;
    if (m->type == MsgType::release) break;
    if (m->type != MsgType::data) continue;
    wire::Any said = wire::decode(*m, &ctx_);
    const auto* exec = std::get_if<wire::Exec>(&said);
    if (!exec) continue;
    const Executed e = run_one(exec->input, 1);
    ch_.send(wire::ExecVerdict{exec->id, e.verdict, e.detail, outcome_json(e.outcome)});
    if (retire_) return detail::kRetired;
  }
  ch_.send(final_audit());
  return 0;
}

// The campaign's corpus, for this worker's mutators.
void Consumer::load_corpus() {
  const json seeds = start_.contains("corpus") ? start_.at("corpus") : json::array();
  for (const auto& seed : seeds) {
    // Seeds are stored relative to the exports they came from: rebuilt with this campaign's.
    std::string why;
    try {
      if (auto in = resolve(ctx_, symbolic_from_json(seed), &why)) corpus_.push_back(*in);
      else std::fprintf(stderr, "fuzz consumer: corpus entry skipped: %s\n", why.c_str());
    } catch (const std::exception& e) {
      std::fprintf(stderr, "fuzz consumer: corpus entry skipped: %s\n", e.what());
    }
  }
}

// Warm-up: one clean open of every live export, so that whatever the runtime sets up
// once (device files, caches) is there before the descriptor and mapping baselines.
// Calibration: where a real, unchanged handle maps is the runtime's meaning of it (CUDA
// exports an interior pointer's allocation base, sycl.mem.get.interior); a mutated
// handle is judged against that, and the campaign says what it learnt.
std::vector<std::string> Consumer::calibrate() {
  std::vector<std::string> calibration;
  for (std::size_t b = 0; target_ == "memory" && b < ctx_.bases.size(); ++b) {
    const Input& in = ctx_.bases[b];
    int fd = in.descriptor >= 0 ? base_fds_[static_cast<std::size_t>(in.descriptor)] : -1;
    Result<DevPtr> r = adapter_->mem_open(in.data(), fd, 0);
    if (!r.ok()) continue;
    const std::string& name = ctx_.base_names[b];
    if (name.rfind("producer.export[", 0) == 0) {
      const Judgement j = judge_mapping(table_, r.value, std::nullopt, *reader_, scratch_);
      if (j.verdict == Verdict::wrong_offset && j.alloc >= 0) {
        CanaryAlloc& a = table_[static_cast<std::size_t>(j.alloc)];
        a.live.push_back({j.offset, a.size - j.offset});
        calibration.push_back(name + " (unchanged) maps " + a.name + " from offset " + std::to_string(j.offset) +
                              ", not where it was exported: judged as that export");
      }
    }
    (void)adapter_->mem_close(r.value);
  }
  if (!event_identity_.empty()) calibration.push_back(event_identity_);
  return calibration;
}

int Consumer::run() {
  // A placeholder for the worker page that "go" brings: its number is fixed from the start.
  page_fd_ = unique_fd(::memfd_create("ipcheck-fuzz-page", MFD_CLOEXEC));
  if (!page_fd_) {
    std::fprintf(stderr, "fuzz consumer: cannot create its page descriptor: %s\n", std::strerror(errno));
    return 2;
  }
  try {
    setup();
  } catch (const std::exception& f) {
    fail_setup(ch_, f, "setup");
    return 0;
  }
  load_corpus();
  std::vector<std::string> calibration = calibrate();
  ch_.send(wire::Ready{ctx_, ::getpid(), std::move(calibration)});
  PageMapping map;
  try {
    if (!wait_for_go()) {  // a standby the campaign did not need
      ch_.send(msg::Done{false, ""});
      return 0;
    }
  } catch (const std::exception& f) {
    fail_setup(ch_, f, "go");
    return 0;
  }
  map.p = ::mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, page_fd_.get(), 0);
  if (map.p == MAP_FAILED) {
    std::fprintf(stderr, "fuzz consumer: cannot map its worker page (fd %d): %s\n", page_fd_.get(), std::strerror(errno));
    return 2;
  }
  page_ = static_cast<WorkerPage*>(map.p);
  fd_floor_ = lowest_free_fd();
  before_ = take_proc_snapshot();
  const int rc = go_.replay ? replay() : campaign();
  ch_.send(msg::Done{false, ""});
  std::fflush(nullptr);
  // A lost context: no destructor and no exit handler may call into the runtime again (CUDA:
  // "the process must be terminated and relaunched"); one that crashed there was reported
  // as a crash between inputs (reports/findings/cuda-580.159.04/ipcheck-crash-after-context-lost.md).
  if (rc == detail::kRetired) ::_exit(rc);
  return rc;
}

}  // namespace ipcheck::fuzz::detail
