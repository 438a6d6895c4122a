// What `ipcheck fuzz --export-c` reads (export_c_finding.cpp): the finding, from a reproducer,
// a finding's description or a campaign's results.json, and the checks that refuse one no C
// program reproduces. export_c.cpp writes the program. Private to fuzz/src.
#pragma once

#include <map>
#include <string>

#include "ipcheck/fuzz/layout.hpp"
#include "ipcheck/fuzz/symbolic.hpp"
#include "export_c.hpp"

namespace ipcheck::fuzz::export_c_detail {

// What a finding says, wherever it was read from.
struct Finding {
  std::string id;
  std::string outcome;   // the oracle's verdict name
  std::string detail;    // what the campaign saw ("" when only a reproducer was given)
  std::string adapter;
  std::string driver;    // driver version it was found on
  std::string layout;    // handle layout the campaign used
  std::string target = "memory";  // which handles the campaign fuzzed (--target)
  std::map<std::string, std::string> adapter_options;  // the run's --adapter-opt (ur: backend, l0)
  std::string from;      // where it was read
  Symbolic input;
  bool has_input = false;
};

// Where --export-c finds the finding: a file, an id of --results, or the id's reproducer in
// the campaign's folder. A field of the wrong type or a missing one is a usage error
// (std::invalid_argument) naming what was read, as every other fault of the file is.
Finding find_export_finding(const ExportCOptions& o);

// Refuses, with the reason, a finding no C program reproduces: another adapter's or
// target's, one without an input, or one whose outcome is no finding kind.
void check_exportable(const Finding& f);

// Refuses an input no CUDA handle can be: another length, a resealed checksum.
void check_cuda_input(const Finding& f, const HandleLayout& layout, bool events);

// Refuses an input no Unified Runtime program can rebuild: another length than the layout's,
// bytes past it, a descriptor passed beside the bytes.
void check_ur_input(const Finding& f, const HandleLayout& layout);

}  // namespace ipcheck::fuzz::export_c_detail
