// libFuzzer target: the reproducer reader (`ipcheck fuzz --replay FILE`): the file's bytes
// parsed as ipcheck reads any JSON input (bounded depth), then every field checked
// (fuzz::reproducer_from_json) and the adapter options a replay would trust picked, with
// cuda's option list (its `library` names a library: never taken from a file).
//
// Oracles: a bad file is FileError or std::invalid_argument (exit 2), anything else escapes;
// no option that names a library is ever trusted; the input read back through to_json is
// the same input.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "ipcheck/fuzz/repro_file.hpp"
#include "ipcheck/reports/files.hpp"

using namespace ipcheck;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  fuzz::ReproFile f;
  try {
    f = fuzz::reproducer_from_json(reports::parse_json_text(text, "fuzz.repro", "reproducer"));
  } catch (const reports::FileError&) {
    return 0;
  } catch (const std::invalid_argument&) {
    return 0;
  }
  std::vector<std::string> ignored;
  const auto trusted = fuzz::trusted_adapter_options(f, "cuda", {"library"}, {"library"}, ignored);
  if (trusted.count("library")) std::abort();  // a file chose a library
  if (trusted.size() + ignored.size() != f.adapter_options.size()) std::abort();
  const fuzz::Symbolic again = fuzz::symbolic_from_json(fuzz::to_json(f.input));
  if (fuzz::to_json(again) != fuzz::to_json(f.input)) std::abort();  // what is written reads back the same
  (void)reports::dump_json(fuzz::to_json(f.input));
  return 0;
}
