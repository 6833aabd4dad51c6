#include "harness/compile_server.hpp"

#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <string>

#include "harness/compile_sandbox.hpp"
#include "harness/file_guard.hpp"
#include "harness/landlock.hpp"

namespace ak {
namespace {

void send(FILE* out, const std::string& text) {
  std::fwrite(text.data(), 1, text.size(), out);
  std::fflush(out);
}

/// One compile of our own before any candidate's: NVRTC opens its builtins library and the
/// headers' folder on its first use, which the guards would then refuse.
void warm_up(const std::string& arch) {
  CompileRequest req{"#include <cuda_fp16.h>\n#include <cuda_bf16.h>\nextern \"C\" __global__ void ak_warm(float* y) { y[0] = 1.f; }\n",
                     "ak_warm.cu", {}, arch};
  (void)nvrtc_compile(req);
}

}  // namespace

int run_compile_server() {
  // The protocol owns stdout; anything else printed goes to stderr.
  FILE* out = fdopen(dup(STDOUT_FILENO), "w");
  dup2(STDERR_FILENO, STDOUT_FILENO);
  const std::string root = cuda_include_dir();
  warm_up("sm_90a");
  nlohmann::json ready{{"event", "ready"}};
  if (chdir(root.c_str()) != 0) {
    send(out, nlohmann::json{{"event", "unavailable"}, {"message", "cannot enter " + root}}.dump() + "\n");
    return 2;
  }
  // NVRTC looks at $PWD for the working folder: it must name the one we are in now.
  setenv("PWD", root.c_str(), 1);
  std::string guards = "file guard on " + root;
  if (auto s = restrict_filesystem_to(root); s) guards += ", Landlock";
  else ready["landlock_unavailable"] = s.error().message;
  enable_file_guard(root);
  ready["guards"] = guards;
  send(out, ready.dump() + "\n");
  for (std::string line; std::getline(std::cin, line);) {
    CompileRequest req;
    try {
      req = nlohmann::json::parse(line).get<CompileRequest>();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "compile-server: ignoring a request that cannot be read: %s\n", e.what());
      continue;
    }
    take_refused_paths();
    auto compiled = nvrtc_compile(req);
    CompileOutput o = compiled ? *compiled : CompileOutput{};
    if (!compiled) o.log = compiled.error().message;
    send(out, reply_json(o, take_refused_paths()).dump() + "\n");
    send(out, std::string(o.cubin.begin(), o.cubin.end()));
  }
  return 0;
}

}  // namespace ak
