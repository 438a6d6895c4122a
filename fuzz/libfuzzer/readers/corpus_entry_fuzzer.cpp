// libFuzzer target: the corpus entry reader (`ipcheck fuzz --corpus DIR` reads every *.repro
// there as a seed): fuzz::corpus_entry_input over the file's bytes, for adapter ref, target
// memory. An entry of another adapter or target is skipped (nullopt); a malformed one is
// std::invalid_argument (the campaign skips it, saying why) or FileError; anything else
// escapes and is a finding. An entry taken is a well-formed input.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "ipcheck/fuzz/repro_file.hpp"
#include "ipcheck/reports/files.hpp"

using namespace ipcheck;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const auto input = fuzz::corpus_entry_input(reports::parse_json_text(text, "corpus/x.repro", "corpus file"), "ref",
                                                "memory");
    if (input) {
      const fuzz::Symbolic s = fuzz::symbolic_from_json(*input);  // taken: must read again
      if (s.length > fuzz::kMaxSymbolicLength || s.tail.size() > fuzz::kMaxSymbolicLength) std::abort();
    }
  } catch (const reports::FileError&) {
  } catch (const std::invalid_argument&) {
  }
  return 0;
}
