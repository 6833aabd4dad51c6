#include "daemon/commands/foreground_command.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace ak {

int run_foreground(const std::vector<std::string>& cmd, const std::vector<std::pair<std::string, std::string>>& env,
                   const char* who) {
  pid_t pid = fork();
  if (pid == 0) {
    for (auto& [name, value] : env) {
      const char* old = std::getenv(name.c_str());
      const bool prepend = name == "PYTHONPATH" && old && *old;
      setenv(name.c_str(), (prepend ? value + ":" + old : value).c_str(), 1);
    }
    std::vector<char*> argv;
    for (auto& a : cmd) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execvp(argv[0], argv.data());
    std::fprintf(stderr, "autokernel %s: cannot run %s: %s\n", who, argv[0], std::strerror(errno));
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace ak
