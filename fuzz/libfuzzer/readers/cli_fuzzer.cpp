// libFuzzer target: the command-line layer (harness/include/ipcheck/cli.hpp): the input is
// split at NUL bytes into arguments (at most 64) and parsed with the option set of
// `ipcheck run` (flags, values, repeated options, positionals), then read as run reads it:
// every number helper, the key=value maps, --shard K/N. A bad command line is a UsageError or
// std::invalid_argument (exit 2); anything else escapes and is a finding.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include "ipcheck/cli.hpp"
#include "ipcheck/shard.hpp"

using namespace ipcheck;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::vector<std::string> args;
  std::string cur;
  for (std::size_t i = 0; i < size && args.size() < 64; ++i) {
    if (data[i] == 0) {
      args.push_back(cur);
      cur.clear();
    } else {
      cur += static_cast<char>(data[i]);
    }
  }
  if (args.size() < 64) args.push_back(cur);
  cli::Options o("run", "[options]", "fuzzed");
  o.flag("--exact", "x").flag("--quiet", "x");
  o.value("--jobs", "N", "x", "1").value("--timeout", "S", "x", "60").value("--seed", "N", "x");
  o.value("--shard", "K/N", "x").value("--out", "DIR", "x", "out");
  o.multi("--param", "KEY=VALUE", "x").multi("--adapter-opt", "KEY=VALUE", "x").multi("--filter", "GLOB", "x");
  o.positional("FILE", "x", /*many*/ true, /*required*/ false);
  try {
    if (!o.parse(args)) return 0;  // --help
    (void)o.get_int("--jobs", 1, 256);
    (void)o.get_double("--timeout", 0.1, 86400);
    if (o.has("--seed")) (void)o.get_u64("--seed", 0, UINT64_MAX, true);
    (void)o.get_map("--param");
    (void)o.get_map("--adapter-opt");
    if (o.has("--shard")) {
      const Shard s = parse_shard(o.get("--shard"));
      if (s.total < 1 || s.index < 1 || s.index > s.total) std::abort();
      (void)assign_shards({"a.b", "c.d", "e.f"}, s.total);
    }
  } catch (const cli::UsageError&) {
  } catch (const std::invalid_argument&) {
  }
  for (const auto& a : args) {
    (void)cli::parse_whole(a);
    (void)cli::parse_unsigned(a, true);
    if (const auto d = cli::parse_decimal(a); d && !(*d == *d)) std::abort();  // never NaN
  }
  return 0;
}
