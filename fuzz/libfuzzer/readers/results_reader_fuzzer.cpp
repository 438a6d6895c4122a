// libFuzzer target: the results reader, the path every report command takes (render, diff,
// merge, baseline, history, store add: reports::read_results_text), then what those commands
// do with what it read (merge alone and with itself included). The input is a results file's bytes.
//
// The oracle is the command line's exit-code contract: a bad file is SchemaError (exit 2);
// any other exception would be exit 3 (ipcheck's own bug), so it escapes and libFuzzer
// reports it, as it does a crash, a sanitizer error, a hang or a leak.
#include <cstddef>
#include <cstdint>
#include <string>

#include "ipcheck/reports/diff.hpp"
#include "ipcheck/reports/files.hpp"
#include "ipcheck/reports/history.hpp"
#include "ipcheck/reports/merge.hpp"
#include "ipcheck/reports/render.hpp"
#include "ipcheck/reports/results.hpp"
#include "ipcheck/reports/stable.hpp"
#include "ipcheck/reports/store.hpp"

using namespace ipcheck::reports;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  Results r;
  try {
    r = read_results_text(text, "fuzz.json");
  } catch (const SchemaError&) {
    return 0;  // refused, naming the field: exit 2
  }
  // What the commands do with a file they accepted must not fail.
  (void)render_markdown(r);
  (void)render_html(r);
  (void)render_junit(r);
  const Diff d = diff_results(r, r, "old.json", "new.json");
  (void)render_diff_text(d);
  (void)render_diff_markdown(d);
  (void)dump_json(diff_to_json(d), 2);
  const std::vector<HistoryRun> runs{{"a.json", r}, {"b.json", r}};
  (void)render_history_text(runs);
  (void)render_history_markdown(runs);
  (void)stable_copy(r);
  // report merge of this file alone and with itself (a shard given twice): a refusal is a
  // MergeError (exit 2).
  MergeOptions mo;
  mo.allow_mixed = true;
  mo.coverage = [](Results&) {};
  for (const std::size_t n : {1, 2}) try {
      std::vector<MergeInput> in(n, MergeInput{"shard.json", r});
      const Merged m = merge_results(in, mo);
      (void)dump_json(to_json(m.results));
    } catch (const MergeError&) {
    }
  (void)content_digest(r);
  // What ipcheck writes it reads back.
  (void)read_results_text(dump_json(to_json(r), 2), "written.json");
  return 0;
}
