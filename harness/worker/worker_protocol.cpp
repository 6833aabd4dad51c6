#include "harness/worker/worker_protocol.hpp"

namespace ak::protocol {
namespace {

/// A verdict carries the candidate's text (its compile log, its messages): invalid UTF-8 in it
/// is replaced (U+FFFD) rather than thrown on, which would end the worker.
std::string line(const nlohmann::json& j) { return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n"; }

}  // namespace

std::string evaluate_line(const EvalRequest& r) {
  return line(nlohmann::json{{"op", "evaluate"}, {"request", r}});
}
std::string quit_line() { return line(nlohmann::json{{"op", "quit"}}); }
std::string ready_line(const std::string& gpu) { return line(nlohmann::json{{"event", "ready"}, {"gpu", gpu}}); }
std::string unavailable_line(const std::string& message) {
  return line(nlohmann::json{{"event", "unavailable"}, {"message", message}});
}
std::string stage_line(const std::string& stage) { return line(nlohmann::json{{"event", "stage"}, {"name", stage}}); }
std::string verdict_line(const Verdict& v) { return line(nlohmann::json{{"event", "verdict"}, {"verdict", v}}); }
std::string settled_line(const Verdict& v) { return line(nlohmann::json{{"event", "settled"}, {"verdict", v}}); }

}  // namespace ak::protocol
