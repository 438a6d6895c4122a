// The ipcheck command line: subcommands register here (harness, fuzz, bench, reports),
// each with its own --help.
#pragma once

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
inline constexpr int kUsage = 2;   // bad command line

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
  // Numeric helpers that throw UsageError with the option's name.
  int get_int(const std::string& name, int min, int max) const;
  double get_double(const std::string& name, double min, double max) const;
  std::map<std::string, std::string> get_map(const std::string& name) const;  // key=value list

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

// Runs a command body, turning UsageError into exit 2 with a pointer to --help.
int run_command(const std::string& name, const std::function<int()>& body);

}  // namespace ipcheck::cli
