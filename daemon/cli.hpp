#pragma once
/// `autokernel <command> ...`: global options, dispatch, and the commands not built yet.
#include <string>
#include <vector>

namespace ak {

inline constexpr const char* kVersion = "0.1.0";

/// Runs the CLI on argv[1..]; returns the exit code.
int run_cli(const std::vector<std::string>& args);

}  // namespace ak
