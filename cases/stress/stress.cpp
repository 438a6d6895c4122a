#include "stress.hpp"

namespace ipcheck::catalog {

void GrowthWatch::sample(const std::string& when) {
  ++samples_;
  if (!first_growth_.empty()) return;
  const ResourceCount now = count_resources();
  const auto grew = diff_snapshots(start_.snapshot, now.snapshot);
  if (grew.empty()) return;
  first_growth_ = when + ": descriptors " + std::to_string(start_.fds()) + " -> " + std::to_string(now.fds()) +
                  ", shared mappings " + std::to_string(start_.mappings()) + " -> " + std::to_string(now.mappings()) +
                  ", first new: " + grew.front().kind + " " + grew.front().item;
}

void GrowthWatch::check(Role& r, std::string_view clause, const std::string& what, Where w) {
  sample("at the end");
  // What the process holds is what the runtime under it left: ipcheck's audit only counts it.
  r.check(first_growth_.empty(), Evidence::of(Outcome::runtime_success("/proc/self audit")), clause,
          first_growth_.empty() ? what + ": descriptors and shared mappings unchanged at all " +
                                      std::to_string(samples_) + " samples (" + std::to_string(start_.fds()) +
                                      " descriptors, " + std::to_string(start_.mappings()) + " mappings)"
                                : what + ": grew " + first_growth_,
          w);
}

void progress(Role& r, long done, long total, long every, const std::string& what) {
  if (done % every == 0 || done == total)
    r.note(what + ": " + std::to_string(done) + " of " + std::to_string(total));
}

}  // namespace ipcheck::catalog
