#pragma once
/// Running a user's program in the foreground: `profile` runs the program it profiles, `verify`
/// the model runner. The program inherits our terminal and environment, with a few variables set.
#include <string>
#include <utility>
#include <vector>

namespace ak {

/// Runs `cmd` (found on PATH) with `env` set over our environment and "PYTHONPATH" entries put
/// first on the path, waits, and returns its exit status (128 + N for a signal N, 127 when it
/// cannot start: then `who` names the command in the message). SIGTERM, SIGINT and SIGHUP sent to
/// autokernel are passed on to the program, and autokernel goes on waiting for it; should
/// autokernel itself be killed, the program gets a SIGTERM.
int run_foreground(const std::vector<std::string>& cmd, const std::vector<std::pair<std::string, std::string>>& env,
                   const char* who);

}  // namespace ak
