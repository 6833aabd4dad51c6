#include <catch2/catch.hpp>

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>

#include "daemon/loop/service_notify.hpp"
#include "tests/support.hpp"

using namespace ak;

TEST_CASE("READY and STATUS reach systemd's notify socket", "[service]") {
  test::TempDir d;
  std::string path = (d.path / "notify").string();
  int fd = socket(AF_UNIX, SOCK_DGRAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
  REQUIRE(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  setenv("NOTIFY_SOCKET", path.c_str(), 1);
  {
    ServiceNotifier n;
    CHECK(n.active());
    n.ready();
    n.status("experiment 3, rmsnorm: best 103.50 us (1.84x)");
  }
  unsetenv("NOTIFY_SOCKET");
  char buf[256] = {};
  ssize_t got = recv(fd, buf, sizeof buf - 1, MSG_DONTWAIT);
  CHECK(std::string(buf, size_t(std::max<ssize_t>(got, 0))) == "READY=1");
  got = recv(fd, buf, sizeof buf - 1, MSG_DONTWAIT);
  CHECK(std::string(buf, size_t(std::max<ssize_t>(got, 0))) == "STATUS=experiment 3, rmsnorm: best 103.50 us (1.84x)");
  close(fd);
}

TEST_CASE("outside systemd the notifier does nothing", "[service]") {
  unsetenv("NOTIFY_SOCKET");
  ServiceNotifier n;
  CHECK_FALSE(n.active());
  n.ready();
}
