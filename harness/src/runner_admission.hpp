// What a run's cases share of the machine (private to harness/src; run_suite makes one per
// run, CaseRun asks it): the devices, the slots for starting the adapter's runtime, and the
// right to run alone.
//
// - Placement. A case that uses one device runs on the least busy device (its roles see only
//   that one, through the adapter's device mask: CUDA_VISIBLE_DEVICES, ZE_AFFINITY_MASK); a
//   case that uses several (Case::all_devices) sees them all and counts on each.
// - Start slots. Starting a GPU runtime in a process is costly (a CUDA context: 100-300 ms
//   of a device's time, most of it serialised in the driver): at most `starts_per_device`
//   roles make their contexts at once on a device (AdapterDesc::cost, --starts-per-device).
//   What needs no device (Adapter::prepare: cuda's library load and cuInit, a third of a
//   start) runs before: the role asks for its slot then (want_start), the runner grants it
//   when free (start_granted), and the role frees it when it says `initialised` (or ends).
//   Waiters are served in order per device (on-demand roles of running cases first), so a
//   role that needs a slot on every device is not starved by one-device roles.
// - Alone. A case that timed out while others ran is run again with nothing else running
//   (SuiteWorkers): begin_alone waits for the running cases to end and holds new ones back.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <vector>

namespace ipcheck::runner_detail {

class Admission {
 public:
  // `devices`: the devices the probe found (at least 1 is assumed); `starts_per_device` 0:
  // no limit on starts; `placeable`: the devices a one-device case may be given (those like
  // device 0, which such a case uses: the same IPC aspects); fewer than two: no placing,
  // every case sees every device.
  Admission(int devices, int starts_per_device, std::vector<int> placeable = {});

  int devices() const { return devices_; }
  int starts_per_device() const { return starts_; }

  // The device for a case that uses one (the one running fewest cases), or -1 for a case
  // that uses every device. Give it back with unplace.
  int place(bool all_devices);
  void unplace(int device);

  // A role's place in the queue for a start slot on `device` (-1: one on every device).
  // `urgent`: a role a running case started on demand (a garbage case's next consumer, which
  // its case waits for): it goes before every role of a case that has not begun, after the
  // urgent ones already waiting. A long case that starts processes one after another then
  // does not wait behind the starts of every short case run beside it.
  std::uint64_t queue_start(int device, bool urgent = false);
  // Takes the slot when it is free and no earlier waiter wants the same device; true when
  // taken (the ticket is then spent).
  bool try_start(std::uint64_t ticket);
  // A ticket that will not be used (the role ended before it started).
  void cancel(std::uint64_t ticket);
  // The slot taken by try_start is free again.
  void end_start(int device);

  // Every case runs between begin_case and end_case; begin_case waits while a case runs alone.
  void begin_case();
  void end_case();
  // Waits until no other case runs and holds new ones back until end_alone.
  void begin_alone();
  void end_alone();
  // Cases running now (the caller's included).
  int running() const;

  // What the starts cost, for the run's record: a role's Adapter::init seconds, and how long
  // a role waited for its slot.
  void note_start(double init_s);
  void note_wait(double waited_s);
  struct StartStats {
    int starts = 0;
    double init_s = 0, init_max_s = 0, waited_s = 0;
  };
  StartStats start_stats() const;

 private:
  bool free_for(int device) const;
  bool overlaps(int a, int b) const { return a < 0 || b < 0 || a == b; }

  mutable std::mutex lock_;
  std::condition_variable changed_;
  int devices_;
  int starts_;
  std::vector<int> placeable_;
  std::vector<int> cases_on_;   // cases placed on each device
  std::vector<int> starting_;   // roles initialising the adapter on each device
  struct Waiter {
    std::uint64_t ticket;
    int device;
    bool urgent;
  };
  std::deque<Waiter> waiting_;
  std::uint64_t next_ticket_ = 1;
  int running_ = 0;
  bool alone_wanted_ = false;
  bool alone_ = false;
  StartStats stats_;
};

// The machine's load for a reason's text and the rerun decision: the 1-minute load average
// (/proc/loadavg; negative when unreadable) and the CPUs this process may run on.
struct MachineLoad {
  double load1 = -1;
  int cpus = 1;
  bool busy() const { return load1 > cpus; }
  std::string describe() const;
};
MachineLoad machine_load();

// The default number of jobs for an adapter on this machine: its cores for an adapter that
// runs on the CPU (jobs_per_device 0), else jobs_per_device for each device, at most the
// cores; always at least 1. `why` says how it was found.
int default_jobs(int devices, int jobs_per_device, std::string& why);

}  // namespace ipcheck::runner_detail
