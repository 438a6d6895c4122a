// Several runs side by side, one column per run (usually one driver version each), in the
// order given: what each case did on every version, and how the counts moved.
#pragma once

#include <string>
#include <vector>

#include "ipcheck/reports/results.hpp"

namespace ipcheck::reports {

struct HistoryRun {
  std::string label;  // what the person gave (a path)
  Results results;
};

struct HistoryOptions {
  bool changed_only = false;  // only cases whose status is not the same in every run
};

std::string render_history_text(const std::vector<HistoryRun>& runs, const HistoryOptions& o = {});
std::string render_history_markdown(const std::vector<HistoryRun>& runs, const HistoryOptions& o = {});
std::string render_history_html(const std::vector<HistoryRun>& runs, const HistoryOptions& o = {});

}  // namespace ipcheck::reports
