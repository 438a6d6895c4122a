// libFuzzer target: the store's blob reader (reports::results_from_blob), which reads a run
// back from a row of a results store: a file anyone may hand over. Byte 0 picks what the
// rest of the input is:
//   0: the results JSON, compressed here, with its true size (reaches the JSON reader);
//   1: 8 bytes of results_size (little-endian), then the blob as stored (reaches zlib with
//      any size the row claims);
//   2: the encoding text up to a NUL, then the blob, its size the blob's.
// A damaged row is a StoreError (exit 2); anything else escapes and is a finding.
#include <zlib.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "ipcheck/reports/store.hpp"

using namespace ipcheck::reports;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const std::string rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  std::string blob, encoding = "zlib";
  long long claimed = 0;
  switch (data[0] % 3) {
    case 0: {
      uLongf n = compressBound(static_cast<uLong>(rest.size()));
      blob.resize(n);
      if (compress2(reinterpret_cast<Bytef*>(blob.data()), &n, reinterpret_cast<const Bytef*>(rest.data()),
                    static_cast<uLong>(rest.size()), 1) != Z_OK)
        return 0;
      blob.resize(n);
      claimed = static_cast<long long>(rest.size());
      break;
    }
    case 1: {
      if (rest.size() < 8) return 0;
      std::uint64_t v = 0;
      std::memcpy(&v, rest.data(), 8);
      claimed = static_cast<long long>(v);
      blob = rest.substr(8);
      break;
    }
    default: {
      const auto nul = rest.find('\0');
      encoding = rest.substr(0, nul);
      blob = nul == std::string::npos ? std::string() : rest.substr(nul + 1);
      claimed = static_cast<long long>(blob.size());
      break;
    }
  }
  try {
    (void)results_from_blob(blob, encoding, claimed, "fuzz.sqlite: run 1");
  } catch (const StoreError&) {
  }
  return 0;
}
