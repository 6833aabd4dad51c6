#pragma once
/// The lines the daemon and its worker exchange, one JSON object per line.
///   daemon -> worker: {"op":"evaluate","request":{...}} | {"op":"quit"}
///   worker -> daemon: {"event":"ready","gpu":"..."} | {"event":"unavailable","message":"..."}
///                     {"event":"stage","name":"smoke"} | {"event":"verdict","verdict":{...}}
#include <string>

#include <nlohmann/json.hpp>

#include "harness/evaluation/evaluate.hpp"

namespace ak::protocol {

std::string evaluate_line(const EvalRequest& r);
std::string quit_line();
std::string ready_line(const std::string& gpu);
std::string unavailable_line(const std::string& message);
std::string stage_line(const std::string& stage);
std::string verdict_line(const Verdict& v);
/// The verdict before the counters pass, which the pass cannot change (Harness::evaluate's on_settled).
std::string settled_line(const Verdict& v);

}  // namespace ak::protocol
