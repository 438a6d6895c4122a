// Shards: a deterministic, balanced part of a run's selected cases, so that N machines run
// one catalog run between them (`ipcheck run --shard K/N`) and `ipcheck report merge` joins
// their results.json files into one run.
//
// The rule (fnv1a64-balanced/1), exact so that another tool can reproduce it:
//   1. The selected jobs are the run's case ids after filters and fault injection, the full
//      id of an injected run included (`memory.roundtrip.page@producer:after_export`); M of them.
//   2. h(id) = FNV-1a 64 over the id's UTF-8 bytes (offset basis 14695981039346656037,
//      prime 1099511628211, xor then multiply, modulo 2^64).
//   3. Shard k (0-based) holds exactly floor(M/N) jobs, plus one when k < M mod N.
//   4. Jobs are taken in ascending (h, id) order; each goes to shard h mod N when that
//      shard still has room, else to the next shard with room: (h+1) mod N, (h+2) mod N, ...
//   5. Shard K (1-based, K = k + 1) runs its jobs in the run's (catalog) order.
// So counts differ by at most one, a job's shard depends on its id, N and (through step 3's
// room only) the other selected ids, never on the order cases were registered in; most jobs
// sit on h mod N. Expected time is not weighed: a case's time is not known before it runs.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace ipcheck {

inline constexpr std::string_view kShardRule = "fnv1a64-balanced/1";

struct Shard {
  int index = 1;       // K, from 1 to total
  int total = 1;       // N
  std::string source;  // where it came from: "--shard", "IPCHECK_SHARD", "CI_NODE_INDEX/CI_NODE_TOTAL", ...
};

// FNV-1a, 64 bits, over the bytes of `text`.
std::uint64_t fnv1a64(std::string_view text);

// The 0-based shard of each id (the rule above), in the order given.
std::vector<int> assign_shards(const std::vector<std::string>& ids, int total);
// The positions in `ids` of shard `s` (1-based index), ascending.
std::vector<std::size_t> shard_members(const std::vector<std::string>& ids, const Shard& s);

// "K/N" with 1 <= K <= N; throws std::invalid_argument naming the value and the fix.
Shard parse_shard(const std::string& text, const std::string& source = "--shard");

// The shard the environment names. IPCHECK_SHARD=K/N (1-based) is always read; with
// `ci_systems` (ipcheck run --shard auto, or IPCHECK_SHARD=auto) the variables of CI systems
// are read too, the first found in this order:
//   JOB_COMPLETION_INDEX (0-based) with IPCHECK_SHARD_TOTAL or `total` (Kubernetes indexed jobs
//                                                            give no total)
//   CI_NODE_INDEX / CI_NODE_TOTAL                           (GitLab CI `parallel:`; 1-based)
//   BUILDKITE_PARALLEL_JOB / BUILDKITE_PARALLEL_JOB_COUNT   (Buildkite; 0-based)
//   CIRCLE_NODE_INDEX / CIRCLE_NODE_TOTAL                   (CircleCI; 0-based)
//   SYSTEM_JOBPOSITIONINPHASE / SYSTEM_TOTALJOBSINPHASE     (Azure Pipelines `parallel`; 1-based)
// They are not read unasked: GitLab sets CI_NODE_INDEX in every job of a `parallel: matrix`,
// and a CTest run starts ipcheck hundreds of times, none of which is a shard.
// An index without its total, a value that is not a number, an index out of range, or
// `ci_systems` with none of them set throws std::invalid_argument naming the variable, its
// value and the fix. nullopt: none is set. `getenv` is injectable for tests.
std::optional<Shard> shard_from_environment(bool ci_systems, std::optional<int> total = std::nullopt,
                                            const std::function<const char*(const char*)>& getenv = nullptr);

// results.json's run.options.shard: {index, total, source, rule, selected, positions}.
nlohmann::json shard_json(const Shard& s, std::size_t selected, const std::vector<std::size_t>& positions);

}  // namespace ipcheck
