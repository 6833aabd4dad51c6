// autokernel: the binary. Everything it does is a subcommand (daemon/cli.cpp).
#include <string>
#include <vector>

#include "daemon/cli.hpp"

int main(int argc, char** argv) {
  return ak::run_cli(std::vector<std::string>(argv + 1, argv + argc));
}
