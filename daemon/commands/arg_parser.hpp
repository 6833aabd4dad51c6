#pragma once
/// A small command-line parser: each command declares its options and positionals, gets
/// `--help` for free, and every mistake becomes a message that says what was expected.
#include <string>
#include <vector>

#include "common/result.hpp"

namespace ak {

class ArgParser {
 public:
  ArgParser(std::string usage, std::string description)
      : usage_(std::move(usage)), description_(std::move(description)) {}

  /// --name VALUE (or --name=VALUE).
  ArgParser& option(const std::string& name, const std::string& value_name, const std::string& help, std::string* out);
  /// --name, a switch.
  ArgParser& flag(const std::string& name, const std::string& help, bool* out);
  /// A positional argument; required ones must come first.
  ArgParser& positional(const std::string& name, const std::string& help, std::string* out, bool required = true);
  /// Every remaining positional argument (at least one when required).
  ArgParser& positionals(const std::string& name, const std::string& help, std::vector<std::string>* out, bool required = true);
  /// Everything after "--" (for commands that run another program).
  ArgParser& rest(const std::string& name, const std::string& help, std::vector<std::string>* out);

  /// Parses; `help_requested` is set by --help/-h (the caller prints help() and exits 0).
  Status parse(const std::vector<std::string>& args, bool& help_requested);
  std::string help() const;

 private:
  struct Opt {
    std::string name, value_name, help;
    std::string* value = nullptr;
    bool* flag = nullptr;
  };
  struct Pos {
    std::string name, help;
    std::string* out = nullptr;
    bool required = false;
  };
  std::string usage_, description_;
  std::vector<Opt> opts_;
  std::vector<Pos> pos_;
  std::string rest_name_, rest_help_;
  std::vector<std::string>* rest_ = nullptr;
  Pos many_{};
  std::vector<std::string>* many_out_ = nullptr;
};

}  // namespace ak
