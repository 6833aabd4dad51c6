#include "daemon/kernelbench/problem_analysis.hpp"

#include <cstdlib>
#include <map>

#include "harness/child_process.hpp"

extern char** environ;

namespace ak {

const std::map<std::string, std::string>& embedded_python();

namespace {

/// The caller's environment, as the analyser inherits it ("NAME=value" each).
std::vector<std::string> own_environment() {
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) env.emplace_back(*e);
  return env;
}

std::string own_path() {
  const char* path = std::getenv("PATH");
  return path ? path : "/usr/local/bin:/usr/bin:/bin";
}

/// A problem is read in well under a second; this only bounds a Python that hangs.
constexpr double kAnalysisSeconds = 60;

}  // namespace

const std::string& problem_analyser_source() {
  return embedded_python().at("daemon/kernelbench/analyse_problem.py");
}

bool python_available(const std::string& python) { return !find_executable(python, own_path()).empty(); }

Result<nlohmann::json> analyse_problem(const std::string& python, const std::string& problem_path) {
  // The script arrives on stdin (`python -`): no temporary file, nothing on the command line. Its
  // stderr stays the caller's, so the analyser's own complaints reach the user.
  const std::string exe = find_executable(python, own_path());
  if (exe.empty()) return error(problem_path + ": cannot run the analyser: no " + python + " on PATH");
  ChildProcess child;
  ChildOptions options;
  options.own_process_group = false;
  if (auto started = child.start({exe, "-I", "-", problem_path}, own_environment(), options); !started)
    return error(problem_path + ": cannot run the analyser (" + exe + "): " + started.error().message);
  // Python reads the whole script before it runs any of it, so writing all of it first cannot
  // deadlock against its output. A Python that died early fails the write: its status says why.
  child.write_all(problem_analyser_source());
  child.close_input();
  std::string out;
  for (bool timed_out = false, eof = false; !eof;) {
    auto line = child.read_line(kAnalysisSeconds, timed_out, eof);
    if (timed_out) return error(problem_path + ": the analyser (" + exe + ") ran past " + std::to_string(int(kAnalysisSeconds)) + " s");
    if (line) out += *line + "\n";
  }
  const std::string how = child.reap();
  if (how != "exited with code 0")
    return error(problem_path + ": the analyser (" + python + ") " + how + " (its message is above)");
  auto json = nlohmann::json::parse(out, nullptr, false);
  if (json.is_discarded() || !json.is_object() || !json.contains("accepted"))
    return error(problem_path + ": the analyser printed no verdict (expected a JSON object)");
  return json;
}

}  // namespace ak
