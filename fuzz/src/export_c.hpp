// `ipcheck fuzz --export-c FINDING -o repro.c`: one cuda or ur fuzz finding as a standalone
// C program (libc, and libcuda or Unified Runtime's loader through dlopen, its own producer
// and consumer processes, no ipcheck), for a driver or runtime team to build and run.
#pragma once

#include <string>

namespace ipcheck::fuzz {

struct ExportCOptions {
  std::string finding;       // a .repro or finding .json file, or a finding id
  std::string results;       // a results.json whose fuzz section names the id ("" none)
  std::string campaign_dir;  // where <id>.repro is looked for when no --results is given
  std::string output;        // the C file to write
};

// Writes the program; returns a line saying what was written. Throws std::invalid_argument
// (a usage error: the finding cannot be found, is not a cuda memory- or event-handle finding
// or a ur memory-handle finding, has no input) or std::runtime_error (the file cannot be written).
std::string export_c(const ExportCOptions& o);

}  // namespace ipcheck::fuzz
