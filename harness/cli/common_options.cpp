// What every ipcheck command parses the same way: the adapter and its options, the skip
// exit code, output folders, and the signals that end a run.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "ipcheck/adapter.hpp"
#include "ipcheck/cli.hpp"
#include "ipcheck/reports/files.hpp"

namespace ipcheck::cli {

namespace {

std::string joined(const std::vector<std::string>& items) {
  std::string s;
  for (const auto& x : items) s += (s.empty() ? "" : ", ") + x;
  return s;
}

std::atomic<bool>* g_flag = nullptr;
volatile sig_atomic_t g_said = 0;

void on_interrupt(int sig) {
  if (g_flag) g_flag->store(true);
  if (g_said) return;
  g_said = 1;
  // write(2) only: the handler may run anywhere. The run's own code writes the results.
  const char* name = sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : sig == SIGHUP ? "SIGHUP" : "a signal";
  const char* tail = ": ending the run; finished cases are kept, the others are written as incomplete\n";
  (void)!::write(STDERR_FILENO, "\nipcheck: ", 10);
  (void)!::write(STDERR_FILENO, name, std::strlen(name));
  (void)!::write(STDERR_FILENO, tail, std::strlen(tail));
}

}  // namespace

void add_adapter_options(Options& o, const std::string& adapter_help) {
  std::string keys;
  for (const auto& a : adapters())
    if (!a.options.empty()) keys += (keys.empty() ? "" : "; ") + a.name + ": " + joined(a.options);
  o.value("--adapter", "NAME", adapter_help + " (ipcheck list --adapters)", "ref")
      .value("--transport", "T", "descriptor transport: pidfd, scm or auto", "auto")
      .multi("--adapter-opt", "KEY=VALUE", "adapter option (" + keys + ")");
}

AdapterChoice adapter_choice(const Options& o) {
  AdapterChoice c;
  c.adapter = o.get("--adapter");
  const AdapterDesc* desc = find_adapter(c.adapter);
  if (!desc) {
    std::vector<std::string> names;
    for (const auto& a : adapters()) names.push_back(a.name);
    throw UsageError("--adapter is '" + c.adapter + "'; use one of " + joined(names) + " (ipcheck list --adapters)");
  }
  c.transport = o.get("--transport");
  if (c.transport != "pidfd" && c.transport != "scm" && c.transport != "auto")
    throw UsageError("--transport is '" + c.transport + "'; use pidfd, scm or auto");
  c.options = o.get_map("--adapter-opt");
  for (const auto& [key, value] : c.options)
    if (std::find(desc->options.begin(), desc->options.end(), key) == desc->options.end())
      throw UsageError("--adapter-opt '" + key + "' is no option of adapter " + c.adapter + "; " +
                       (desc->options.empty() ? c.adapter + " takes none" : c.adapter + " takes " + joined(desc->options)));
  // Values too, in the same place: a bad one is exit 2 here, never an adapter that is "not
  // available" in every case (skip, exit 0).
  if (desc->check_value)
    for (const auto& [key, value] : c.options)
      if (std::string why = desc->check_value(key, value); !why.empty())
        throw UsageError("--adapter-opt " + key + "='" + value + "' is no valid value for adapter " + c.adapter + "; " +
                         why);
  return c;
}

std::optional<int> skip_exit_code(const Options& o) {
  if (!o.has("--skip-exit-code")) return std::nullopt;
  return o.get_int("--skip-exit-code", 0, 255);
}

void prepare_output_option(const std::string& option, const std::string& dir) {
  try {
    reports::prepare_output_dir(dir);
  } catch (const reports::FileError& e) {
    throw UsageError(option + " is '" + dir + "': " + e.what());
  }
}

void install_interrupt_handlers(std::atomic<bool>* flag) {
  g_flag = flag;
  struct sigaction sa {};
  sa.sa_handler = on_interrupt;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;  // not SA_RESETHAND: a second signal ends the run the same way
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) ::sigaction(sig, &sa, nullptr);
}

}  // namespace ipcheck::cli
