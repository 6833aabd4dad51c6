#pragma once
/// Talking to systemd (Type=notify) without linking libsystemd: READY, STATUS and WATCHDOG
/// datagrams to $NOTIFY_SOCKET. Outside systemd every call does nothing.
#include <atomic>
#include <string>
#include <thread>

namespace ak {

class ServiceNotifier {
 public:
  ServiceNotifier();
  ~ServiceNotifier();
  void ready() { send("READY=1"); }
  void status(const std::string& text) { send("STATUS=" + text); }
  void stopping() { send("STOPPING=1"); }
  /// Says the loop is alive; the watchdog thread pings systemd only while this keeps happening,
  /// so a wedged loop is restarted by systemd rather than kept alive by the thread.
  void alive();
  bool active() const { return !socket_.empty(); }
  void send(const std::string& message);

 private:
  std::string socket_;
  double watchdog_s_ = 0;
  std::atomic<double> last_alive_{0};
  std::atomic<bool> quit_{false};
  std::thread pinger_;
};

}  // namespace ak
