// The ipcheck command line: subcommands register here (harness, fuzz, bench, reports),
// each with its own --help.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace ipcheck::cli {

// Exit codes shared by every command.
inline constexpr int kOk = 0;
inline constexpr int kFailed = 1;  // a result was not as expected
inline constexpr int kUsage = 2;   // bad command line, or a file that cannot be read or written
inline constexpr int kInternal = 3;  // ipcheck itself failed (a bug to report)

struct Command {
  std::string name;
  std::string summary;
  std::function<int(const std::vector<std::string>& args)> run;
  bool hidden = false;
};

void register_command(Command c);
const std::map<std::string, Command>& commands();
int main(int argc, char** argv);

struct CommandRegistration {
  explicit CommandRegistration(Command c) { register_command(std::move(c)); }
};

class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A small option parser: --name value, --name=value, flags, repeated options, positionals.
class Options {
 public:
  Options(std::string command, std::string synopsis, std::string description);
  Options& flag(const std::string& name, const std::string& help);
  Options& value(const std::string& name, const std::string& metavar, const std::string& help,
                 const std::string& fallback = "");
  Options& multi(const std::string& name, const std::string& metavar, const std::string& help);
  Options& positional(const std::string& metavar, const std::string& help, bool many = false, bool required = true);

  // Throws UsageError naming the problem; returns false when --help was printed.
  bool parse(const std::vector<std::string>& args);

  bool has(const std::string& name) const;
  std::string get(const std::string& name) const;
  std::vector<std::string> all(const std::string& name) const;
  const std::vector<std::string>& positionals() const noexcept { return positional_values_; }
  // Numbers parse the same for every option (parse_whole, parse_decimal below); each helper
  // throws UsageError naming the option, the value and the range.
  int get_int(const std::string& name, int min, int max) const;
  std::uint64_t get_u64(const std::string& name, std::uint64_t min, std::uint64_t max, bool hex_allowed = false) const;
  double get_double(const std::string& name, double min, double max) const;
  // A key=value list; a key given twice is a UsageError.
  std::map<std::string, std::string> get_map(const std::string& name) const;

  std::string help() const;
  const std::string& command() const noexcept { return command_; }

 private:
  struct Spec {
    std::string name, metavar, help, fallback;
    bool takes_value = false;
    bool repeated = false;
  };
  struct Positional {
    std::string metavar, help;
    bool many = false, required = true;
  };
  const Spec* find(const std::string& name) const;
  std::string command_, synopsis_, description_;
  std::vector<Spec> specs_;
  std::vector<Positional> positional_specs_;
  std::map<std::string, std::vector<std::string>> values_;
  std::vector<std::string> positional_values_;
};

// Runs a command body: UsageError and reports::FileError are exit 2 with the message,
// any other exception exit 3 (ipcheck's own failure), never an abort.
int run_command(const std::string& name, const std::function<int()>& body);

// ---- Values every command parses the same way.

// A whole number: an optional '-' and decimal digits, nothing else (no spaces, no '+',
// no 0x). nullopt when malformed or out of range.
std::optional<long long> parse_whole(const std::string& text);
// Decimal digits, or 0x and hex digits where `hex_allowed`. No sign.
std::optional<std::uint64_t> parse_unsigned(const std::string& text, bool hex_allowed);
// A finite decimal number (digits, '.', an exponent; a leading '-'): no spaces, no inf or nan.
std::optional<double> parse_decimal(const std::string& text);

// The adapter a command talks to: --adapter, --transport, --adapter-opt, parsed here for
// run, fuzz, bench and info alike.
struct AdapterChoice {
  std::string adapter;
  std::string transport;
  std::map<std::string, std::string> options;
};
// Registers the three options on `o`.
void add_adapter_options(Options& o, const std::string& adapter_help);
// Reads them: an unknown adapter or transport, or an --adapter-opt key the adapter does not
// take, is a UsageError naming it and listing the valid ones.
AdapterChoice adapter_choice(const Options& o);

// --skip-exit-code N, checked when given (0 to 255), whether or not it is used.
std::optional<int> skip_exit_code(const Options& o);

// --out DIR (or another option naming an output folder): created and proven writable now,
// before any work; a UsageError naming the option, the value and the fix otherwise.
void prepare_output_option(const std::string& option, const std::string& dir);

// SIGINT, SIGTERM and SIGHUP set `flag` (every time: a second Ctrl-C still lets the results
// be written) and say once on standard error that the run is ending.
void install_interrupt_handlers(std::atomic<bool>* flag);

}  // namespace ipcheck::cli
