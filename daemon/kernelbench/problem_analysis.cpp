#include "daemon/kernelbench/problem_analysis.hpp"

#include <cstdlib>
#include <algorithm>
#include <map>
#include <optional>
#include <thread>

#include "harness/process/child_process.hpp"

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

/// A problem is read in seconds (a whole ResNet on the meta device in about a minute, importing
/// PyTorch included); this only bounds a problem that hangs.
constexpr double kSecondsPerProblem = 900;

/// One verdict line of the analyser, or why it is not one.
Result<nlohmann::json> verdict_of(const std::string& line, const std::string& problem_path) {
  auto json = nlohmann::json::parse(line, nullptr, false);
  if (json.is_discarded() || !json.is_object() || !json.contains("accepted"))
    return error(problem_path + ": the analyser printed no verdict (expected a JSON object, got: " + line.substr(0, 200) + ")");
  return json;
}

}  // namespace

const std::string& problem_analyser_source() {
  // One script on stdin: the offline readers (a built-in type's match, an elementwise chain) first,
  // so that the analyser's main finds them defined; they use its `torch` and helpers at call time.
  static const std::string text = embedded_python().at("daemon/kernelbench/builtin_match.py") + "\n" +
                                  embedded_python().at("daemon/kernelbench/elementwise_chain.py") + "\n" +
                                  embedded_python().at("daemon/kernelbench/analyse_problem.py");
  return text;
}

bool python_available(const std::string& python) { return !find_executable(python, own_path()).empty(); }

Result<std::vector<Result<nlohmann::json>>> analyse_problems(const std::string& python,
                                                             const std::vector<std::string>& problem_paths) {
  // The script arrives on stdin (`python -`): no temporary file. Its stderr stays the caller's,
  // so the analyser's own complaints (and a problem's prints) reach the user.
  const std::string exe = find_executable(python, own_path());
  if (exe.empty()) return error("cannot run the analyser: no " + python + " on PATH");
  ChildProcess child;
  ChildOptions options;
  options.own_process_group = false;
  std::vector<std::string> argv{exe, "-I", "-"};
  argv.insert(argv.end(), problem_paths.begin(), problem_paths.end());
  if (auto started = child.start(argv, own_environment(), options); !started)
    return error("cannot run the analyser (" + exe + "): " + started.error().message);
  // Python reads the whole script before it runs any of it, so writing all of it first cannot
  // deadlock against its output. A Python that died early fails the write: its status says why.
  child.write_all(problem_analyser_source());
  child.close_input();
  std::vector<Result<nlohmann::json>> out;
  std::string stopped;
  while (out.size() < problem_paths.size()) {
    const std::string& path = problem_paths[out.size()];
    bool timed_out = false, eof = false;
    auto line = child.read_line(kSecondsPerProblem, timed_out, eof);
    if (timed_out) {
      child.kill_now();
      stopped = "the analyser (" + exe + ") ran past " + std::to_string(int(kSecondsPerProblem)) + " s on " + path;
      break;
    }
    if (line) out.push_back(verdict_of(*line, path));
    if (eof) break;
  }
  const std::string how = stopped.empty() ? child.reap() : "was stopped";
  if (out.empty() && how != "exited with code 0")
    return error("the analyser (" + python + ") " + how + (stopped.empty() ? " (its message is above)" : ": " + stopped));
  while (out.size() < problem_paths.size())
    out.push_back(error(problem_paths[out.size()] + ": " +
                        (stopped.empty() ? "the analyser ended (" + how + ") before reading it (its message is above)" : stopped)));
  return out;
}

Result<std::vector<Result<nlohmann::json>>> analyse_problems_in_parallel(const std::string& python,
                                                                         const std::vector<std::string>& problem_paths,
                                                                         unsigned processes) {
  processes = std::max(1u, std::min<unsigned>(processes, unsigned(problem_paths.size())));
  if (processes <= 1) return analyse_problems(python, problem_paths);
  // Problem i goes to process i % processes: neighbours in a level (the convolutions, the GEMMs) cost alike.
  std::vector<std::vector<std::string>> chunks(processes);
  for (size_t i = 0; i < problem_paths.size(); ++i) chunks[i % processes].push_back(problem_paths[i]);
  std::vector<std::optional<Result<std::vector<Result<nlohmann::json>>>>> answers(processes);
  std::vector<std::thread> threads;
  for (unsigned c = 0; c < processes; ++c)
    threads.emplace_back([&, c] { answers[c] = analyse_problems(python, chunks[c]); });
  for (auto& t : threads) t.join();
  std::vector<Result<nlohmann::json>> out;
  for (size_t i = 0; i < problem_paths.size(); ++i) {
    auto& answer = *answers[i % processes];
    if (!answer) return answer.error();
    out.push_back(std::move((*answer)[i / processes]));
  }
  return out;
}

Result<nlohmann::json> analyse_problem(const std::string& python, const std::string& problem_path) {
  auto all = analyse_problems(python, {problem_path});
  if (!all) return all.error();
  return std::move(all->front());
}

}  // namespace ak
