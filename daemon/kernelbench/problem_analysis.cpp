#include "daemon/kernelbench/problem_analysis.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <csignal>
#include <map>

namespace ak {

const std::map<std::string, std::string>& embedded_python();

namespace {

struct Captured {
  int status = -1;
  std::string out;
};

/// Runs argv with `input` on its stdin, its stdout captured and its stderr inherited (the
/// analyser's own complaints reach the user).
Result<Captured> run_captured(const std::vector<std::string>& argv, const std::string& input) {
  int fds[2], in[2];
  if (pipe(fds) != 0) return error(std::string("cannot create a pipe: ") + std::strerror(errno));
  if (pipe(in) != 0) {
    close(fds[0]);
    close(fds[1]);
    return error(std::string("cannot create a pipe: ") + std::strerror(errno));
  }
  pid_t pid = fork();
  if (pid < 0) return error(std::string("cannot fork: ") + std::strerror(errno));
  if (pid == 0) {
    dup2(fds[1], 1);
    dup2(in[0], 0);
    for (int fd : {fds[0], fds[1], in[0], in[1]}) close(fd);
    std::vector<char*> args;
    for (auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    std::fprintf(stderr, "autokernel kernelbench: cannot run %s: %s\n", args[0], std::strerror(errno));
    _exit(127);
  }
  close(fds[1]);
  close(in[0]);
  // Python reads the whole script before it runs any of it, so writing all of it first cannot
  // deadlock against its output. A Python that died early gives EPIPE: its status says why.
  auto previous = signal(SIGPIPE, SIG_IGN);
  for (size_t done = 0; done < input.size();) {
    ssize_t n = write(in[1], input.data() + done, input.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += size_t(n);
  }
  close(in[1]);
  signal(SIGPIPE, previous);
  Captured c;
  char buf[8192];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    c.out.append(buf, size_t(n));
  }
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  c.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return c;
}

}  // namespace

const std::string& problem_analyser_source() {
  return embedded_python().at("daemon/kernelbench/analyse_problem.py");
}

bool python_available(const std::string& python) {
  if (python.find('/') != std::string::npos) return access(python.c_str(), X_OK) == 0;
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
  for (size_t start = 0; start <= dirs.size();) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    std::string dir = dirs.substr(start, end - start);
    if (dir.empty()) dir = ".";
    if (access((dir + "/" + python).c_str(), X_OK) == 0) return true;
    start = end + 1;
  }
  return false;
}

Result<nlohmann::json> analyse_problem(const std::string& python, const std::string& problem_path) {
  // The script arrives on stdin (`python -`): no temporary file, nothing on the command line.
  auto run = run_captured({python, "-I", "-", problem_path}, problem_analyser_source());
  if (!run) return run.error();
  if (run->status != 0)
    return error(problem_path + ": the analyser (" + python + ") exited with status " + std::to_string(run->status) +
                 " (its message is above)");
  auto json = nlohmann::json::parse(run->out, nullptr, false);
  if (json.is_discarded() || !json.is_object() || !json.contains("accepted"))
    return error(problem_path + ": the analyser printed no verdict (expected a JSON object)");
  return json;
}

}  // namespace ak
