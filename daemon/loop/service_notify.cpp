#include "daemon/loop/service_notify.hpp"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>

namespace ak {
namespace {
double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
}  // namespace

ServiceNotifier::ServiceNotifier() {
  if (const char* s = std::getenv("NOTIFY_SOCKET")) socket_ = s;
  if (const char* w = std::getenv("WATCHDOG_USEC")) watchdog_s_ = std::atof(w) / 1e6;
  last_alive_ = now_s();
  if (active() && watchdog_s_ > 0)
    pinger_ = std::thread([this] {
      while (!quit_) {
        if (now_s() - last_alive_.load() < watchdog_s_) send("WATCHDOG=1");
        for (int i = 0; i < 10 && !quit_; ++i)
          std::this_thread::sleep_for(std::chrono::duration<double>(watchdog_s_ / 20));
      }
    });
}

ServiceNotifier::~ServiceNotifier() {
  quit_ = true;
  if (pinger_.joinable()) pinger_.join();
}

void ServiceNotifier::alive() { last_alive_ = now_s(); }

void ServiceNotifier::send(const std::string& message) {
  if (socket_.empty()) return;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (socket_.size() >= sizeof addr.sun_path) return;
  std::memcpy(addr.sun_path, socket_.data(), socket_.size());
  if (addr.sun_path[0] == '@') addr.sun_path[0] = '\0';  // abstract namespace
  int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return;
  ::sendto(fd, message.data(), message.size(), MSG_NOSIGNAL, reinterpret_cast<sockaddr*>(&addr),
           socklen_t(offsetof(sockaddr_un, sun_path) + socket_.size()));
  ::close(fd);
}

}  // namespace ak
