#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include "harness/compile/compile_sandbox.hpp"
#include "tests/support.hpp"

// Candidates compile in the sandbox's server, a command of the autokernel binary: this test
// binary is not it, so point the sandbox at the real one.
int main(int argc, char* argv[]) {
  ak::set_compile_server_command({ak::test::autokernel_binary(), "compile-server"});
  return Catch::Session().run(argc, argv);
}
