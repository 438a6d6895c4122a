#include "ipcheck/shard.hpp"

#include <algorithm>
#include <cstdlib>
#include <numeric>
#include <stdexcept>

#include "ipcheck/reports/merge.hpp"

namespace ipcheck {

std::uint64_t fnv1a64(std::string_view text) {
  std::uint64_t h = 14695981039346656037ull;
  for (const char ch : text) {
    h ^= static_cast<unsigned char>(ch);
    h *= 1099511628211ull;
  }
  return h;
}

std::vector<int> assign_shards(const std::vector<std::string>& ids, int total) {
  if (total < 1) throw std::invalid_argument("a shard total must be at least 1");
  const std::size_t m = ids.size(), n = static_cast<std::size_t>(total);
  std::vector<std::size_t> room(n, m / n);
  for (std::size_t k = 0; k < m % n; ++k) ++room[k];
  std::vector<std::uint64_t> h(m);
  for (std::size_t i = 0; i < m; ++i) h[i] = fnv1a64(ids[i]);
  std::vector<std::size_t> order(m);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return h[a] != h[b] ? h[a] < h[b] : ids[a] < ids[b];
  });
  std::vector<int> out(m, 0);
  for (const std::size_t i : order) {
    std::size_t k = static_cast<std::size_t>(h[i] % n);
    while (room[k] == 0) k = (k + 1) % n;  // the rooms add up to m: one is free
    --room[k];
    out[i] = static_cast<int>(k);
  }
  return out;
}

std::vector<std::size_t> shard_members(const std::vector<std::string>& ids, const Shard& s) {
  const auto shards = assign_shards(ids, s.total);
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < ids.size(); ++i)
    if (shards[i] == s.index - 1) out.push_back(i);
  return out;
}

namespace {

std::optional<long> whole_number(const std::string& s) {
  if (s.empty() || s.size() > 9 || s.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  return std::stol(s);
}

}  // namespace

Shard parse_shard(const std::string& text, const std::string& source) {
  const auto slash = text.find('/');
  const auto k = slash == std::string::npos ? std::nullopt : whole_number(text.substr(0, slash));
  const auto n = slash == std::string::npos ? std::nullopt : whole_number(text.substr(slash + 1));
  if (!k || !n || *n < 1 || *k < 1 || *k > *n)
    throw std::invalid_argument(source + " is '" + text + "'; write K/N with 1 <= K <= N (for example 2/3: the second of three shards)");
  if (*n > reports::kMaxShardTotal)
    throw std::invalid_argument(source + " is '" + text + "': the shard count N is at most " +
                                std::to_string(reports::kMaxShardTotal) + "; give fewer shards");
  return {static_cast<int>(*k), static_cast<int>(*n), source};
}

std::optional<Shard> shard_from_environment(bool ci_systems, std::optional<int> total,
                                            const std::function<const char*(const char*)>& getenv_fn) {
  auto get = [&](const char* name) -> std::optional<std::string> {
    const char* v = getenv_fn ? getenv_fn(name) : std::getenv(name);
    if (!v || !*v) return std::nullopt;
    return std::string(v);
  };
  auto number = [&](const char* name, const std::string& value) {
    const auto n = whole_number(value);
    if (!n)
      throw std::invalid_argument("environment variable " + std::string(name) + " is '" + value +
                                  "', not a whole number; fix it, or give --shard K/N");
    return static_cast<int>(*n);
  };
  // index variable, total variable, whether the index is 0-based
  auto pair = [&](const char* index_var, const char* total_var, bool zero_based) -> std::optional<Shard> {
    const auto index = get(index_var), count = get(total_var);
    if (!index) return std::nullopt;
    const std::string source = std::string(index_var) + "/" + total_var;
    if (!count)
      throw std::invalid_argument("environment variable " + std::string(index_var) + " is '" + *index + "' but " +
                                  total_var + " is not set; set it, or give --shard K/N");
    const int k = number(index_var, *index) + (zero_based ? 1 : 0);
    const int n = number(total_var, *count);
    if (n > reports::kMaxShardTotal)
      throw std::invalid_argument("environment variable " + std::string(total_var) + " is '" + *count +
                                  "': the shard count is at most " + std::to_string(reports::kMaxShardTotal) +
                                  "; fix it, or give --shard K/N");
    if (n < 1 || k < 1 || k > n)
      throw std::invalid_argument("environment variables " + source + " are '" + *index + "' and '" + *count + "': " +
                                  (zero_based ? "a 0-based index below the total" : "a 1-based index up to the total") +
                                  " is expected; fix them, or give --shard K/N");
    return Shard{k, n, source};
  };
  if (const auto s = get("IPCHECK_SHARD")) {
    if (*s != "auto") return parse_shard(*s, "environment variable IPCHECK_SHARD");
    ci_systems = true;
  }
  if (!ci_systems) return std::nullopt;
  if (const auto index = get("JOB_COMPLETION_INDEX")) {
    const auto from_env = get("IPCHECK_SHARD_TOTAL");
    if (!total && !from_env)
      throw std::invalid_argument("environment variable JOB_COMPLETION_INDEX is '" + *index +
                                  "' (a Kubernetes indexed job), which gives no total; set IPCHECK_SHARD_TOTAL to the "
                                  "job's completions, or give --shard-total N");
    const int n = total ? *total : number("IPCHECK_SHARD_TOTAL", *from_env);
    const int k = number("JOB_COMPLETION_INDEX", *index) + 1;
    const std::string source = std::string("JOB_COMPLETION_INDEX/") + (total ? "--shard-total" : "IPCHECK_SHARD_TOTAL");
    if (n > reports::kMaxShardTotal)
      throw std::invalid_argument("the shard total (" + source.substr(source.find('/') + 1) + ") is " + std::to_string(n) +
                                  ": at most " + std::to_string(reports::kMaxShardTotal) + "; fix it");
    if (n < 1 || k > n)
      throw std::invalid_argument("JOB_COMPLETION_INDEX is '" + *index + "' and the total is " + std::to_string(n) +
                                  ": a 0-based index below the total is expected; fix the total");
    return Shard{k, n, source};
  }
  if (auto s = pair("CI_NODE_INDEX", "CI_NODE_TOTAL", false)) return s;
  if (auto s = pair("BUILDKITE_PARALLEL_JOB", "BUILDKITE_PARALLEL_JOB_COUNT", true)) return s;
  if (auto s = pair("CIRCLE_NODE_INDEX", "CIRCLE_NODE_TOTAL", true)) return s;
  if (auto s = pair("SYSTEM_JOBPOSITIONINPHASE", "SYSTEM_TOTALJOBSINPHASE", false)) return s;
  throw std::invalid_argument(
      "--shard auto found no shard in the environment: none of JOB_COMPLETION_INDEX, CI_NODE_INDEX, "
      "BUILDKITE_PARALLEL_JOB, CIRCLE_NODE_INDEX or SYSTEM_JOBPOSITIONINPHASE is set; give --shard K/N");
}

nlohmann::json shard_json(const Shard& s, std::size_t selected, const std::vector<std::size_t>& positions) {
  return {{"index", s.index},       {"total", s.total},         {"source", s.source},
          {"rule", kShardRule},     {"selected", selected},     {"positions", positions}};
}

}  // namespace ipcheck
