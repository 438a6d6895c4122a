// Admission (runner_admission.hpp): devices, start slots and lone reruns shared by a run's
// worker threads; the machine's load and the default number of jobs.
#include "runner_admission.hpp"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>

namespace ipcheck::runner_detail {

Admission::Admission(int devices, int starts_per_device, std::vector<int> placeable)
    : devices_(std::max(1, devices)), starts_(std::max(0, starts_per_device)),
      cases_on_(static_cast<std::size_t>(devices_), 0), starting_(static_cast<std::size_t>(devices_), 0) {
  for (int d : placeable)
    if (d >= 0 && d < devices_) placeable_.push_back(d);
}

int Admission::place(bool all_devices) {
  std::lock_guard g(lock_);
  if (all_devices || devices_ == 1 || placeable_.size() < 2) {
    for (auto& n : cases_on_) ++n;
    return devices_ == 1 && !all_devices ? 0 : -1;
  }
  int least = placeable_.front();
  for (int d : placeable_)
    if (cases_on_[static_cast<std::size_t>(d)] < cases_on_[static_cast<std::size_t>(least)]) least = d;
  ++cases_on_[static_cast<std::size_t>(least)];
  return least;
}

void Admission::unplace(int device) {
  std::lock_guard g(lock_);
  if (device < 0) {
    for (auto& n : cases_on_) n = std::max(0, n - 1);
  } else if (device < devices_) {
    cases_on_[static_cast<std::size_t>(device)] = std::max(0, cases_on_[static_cast<std::size_t>(device)] - 1);
  }
}

std::uint64_t Admission::queue_start(int device, bool urgent) {
  std::lock_guard g(lock_);
  const std::uint64_t t = next_ticket_++;
  const Waiter w{t, device < devices_ ? device : -1, urgent};
  if (urgent)
    waiting_.insert(std::find_if(waiting_.begin(), waiting_.end(), [](const Waiter& x) { return !x.urgent; }), w);
  else
    waiting_.push_back(w);
  return t;
}

bool Admission::free_for(int device) const {
  if (starts_ == 0) return true;
  if (device >= 0) return starting_[static_cast<std::size_t>(device)] < starts_;
  return std::all_of(starting_.begin(), starting_.end(), [this](int n) { return n < starts_; });
}

bool Admission::try_start(std::uint64_t ticket) {
  std::lock_guard g(lock_);
  for (auto it = waiting_.begin(); it != waiting_.end(); ++it) {
    if (it->ticket != ticket) continue;
    if (starts_ == 0) {  // no limit: no order to keep
      waiting_.erase(it);
      return true;
    }
    // An earlier waiter for the same device goes first (it may be waiting for a slot on
    // every device, which a stream of one-device starts would otherwise never leave free).
    for (auto e = waiting_.begin(); e != it; ++e)
      if (overlaps(e->device, it->device)) return false;
    if (!free_for(it->device)) return false;
    if (it->device >= 0) ++starting_[static_cast<std::size_t>(it->device)];
    else
      for (auto& n : starting_) ++n;
    waiting_.erase(it);
    return true;
  }
  return true;  // not queued: nothing to wait for
}

void Admission::cancel(std::uint64_t ticket) {
  std::lock_guard g(lock_);
  waiting_.erase(std::remove_if(waiting_.begin(), waiting_.end(), [&](const Waiter& w) { return w.ticket == ticket; }),
                 waiting_.end());
}

void Admission::end_start(int device) {
  std::lock_guard g(lock_);
  if (starts_ == 0) return;
  if (device >= 0 && device < devices_) {
    auto& n = starting_[static_cast<std::size_t>(device)];
    n = std::max(0, n - 1);
  } else {
    for (auto& n : starting_) n = std::max(0, n - 1);
  }
}

void Admission::begin_case() {
  std::unique_lock g(lock_);
  changed_.wait(g, [this] { return !alone_ && !alone_wanted_; });
  ++running_;
}

void Admission::end_case() {
  std::lock_guard g(lock_);
  --running_;
  changed_.notify_all();
}

void Admission::begin_alone() {
  std::unique_lock g(lock_);
  // One lone run at a time; then wait for every running case to end.
  changed_.wait(g, [this] { return !alone_ && !alone_wanted_; });
  alone_wanted_ = true;
  changed_.wait(g, [this] { return running_ == 0; });
  alone_wanted_ = false;
  alone_ = true;
  ++running_;
}

void Admission::end_alone() {
  std::lock_guard g(lock_);
  --running_;
  alone_ = false;
  changed_.notify_all();
}

int Admission::running() const {
  std::lock_guard g(lock_);
  return running_;
}

void Admission::note_start(double init_s) {
  std::lock_guard g(lock_);
  ++stats_.starts;
  stats_.init_s += init_s;
  stats_.init_max_s = std::max(stats_.init_max_s, init_s);
}

void Admission::note_wait(double waited_s) {
  std::lock_guard g(lock_);
  stats_.waited_s += waited_s;
}

Admission::StartStats Admission::start_stats() const {
  std::lock_guard g(lock_);
  return stats_;
}

std::string MachineLoad::describe() const {
  char text[96];
  if (load1 < 0)
    std::snprintf(text, sizeof text, "%d CPUs, load average unreadable", cpus);
  else
    std::snprintf(text, sizeof text, "load average %.2f on %d CPUs", load1, cpus);
  return text;
}

MachineLoad machine_load() {
  MachineLoad m;
  cpu_set_t set;
  if (::sched_getaffinity(0, sizeof set, &set) == 0) m.cpus = std::max(1, CPU_COUNT(&set));
  else m.cpus = static_cast<int>(std::max(1L, ::sysconf(_SC_NPROCESSORS_ONLN)));
  std::ifstream in("/proc/loadavg");
  double l = -1;
  if (in >> l) m.load1 = l;
  return m;
}

int default_jobs(int devices, int jobs_per_device, std::string& why) {
  const int cpus = machine_load().cpus;
  if (jobs_per_device <= 0) {
    why = "the adapter runs on the CPU: one job per CPU (" + std::to_string(cpus) + ")";
    return cpus;
  }
  const int d = std::max(1, devices);
  const int by_devices = d * jobs_per_device;
  const int jobs = std::max(1, std::min(cpus, by_devices));
  why = std::to_string(jobs_per_device) + " jobs per device on " + std::to_string(d) + " device" + (d == 1 ? "" : "s") +
        (by_devices > cpus ? ", at most one per CPU (" + std::to_string(cpus) + ")" : "");
  return jobs;
}

}  // namespace ipcheck::runner_detail
