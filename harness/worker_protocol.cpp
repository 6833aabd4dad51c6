#include "harness/worker_protocol.hpp"

namespace ak::protocol {

std::string evaluate_line(const EvalRequest& r) {
  return nlohmann::json{{"op", "evaluate"}, {"request", r}}.dump() + "\n";
}
std::string quit_line() { return nlohmann::json{{"op", "quit"}}.dump() + "\n"; }
std::string ready_line(const std::string& gpu) { return nlohmann::json{{"event", "ready"}, {"gpu", gpu}}.dump() + "\n"; }
std::string unavailable_line(const std::string& message) {
  return nlohmann::json{{"event", "unavailable"}, {"message", message}}.dump() + "\n";
}
std::string stage_line(const std::string& stage) { return nlohmann::json{{"event", "stage"}, {"name", stage}}.dump() + "\n"; }
std::string verdict_line(const Verdict& v) { return nlohmann::json{{"event", "verdict"}, {"verdict", v}}.dump() + "\n"; }

}  // namespace ak::protocol
