#include "daemon/proposers/failure_feedback.hpp"

#include "common/line_diff.hpp"
#include "common/untrusted_text.hpp"
#include "daemon/proposers/experiment_ledger.hpp"
#include "llm/prompt_fence.hpp"

namespace ak {
namespace {

bool failed_candidate(const PastExperiment& e) {
  return !is_daemon_event(e) && e.correctness != "PASS" && !e.source.empty();
}

std::string one_failure(const PastExperiment& e, const std::string& best_source) {
  const std::string number = "#" + std::to_string(e.experiment);
  std::string t = number + " " + e.correctness + " | idea: " + quoted_line(e.description, kDescriptionBytes) + "\n";
  if (best_source.empty()) {
    t += "The file that failed:\n" + fenced(e.source, "cuda", kFailureDiffBytes);
  } else {
    const std::string diff = unified_diff(best_source, e.source, "best.cu", number + ".cu");
    t += diff.empty() ? "Its file is the current best's, unchanged.\n"
                      : "Its file against the current best:\n" + fenced(diff, "diff", kFailureDiffBytes);
  }
  std::string said = e.failure;
  if (!e.compile_log.empty()) said += (said.empty() ? "" : "\n") + e.compile_log;
  t += "What the harness said:\n" + fenced(said.empty() ? "(no message)" : said, "text", kMessageBytes + kCompileLogBytes);
  return t;
}

}  // namespace

std::vector<std::string> failure_feedback(const std::vector<PastExperiment>& history, const std::string& best_source) {
  std::vector<const PastExperiment*> failed;
  for (const PastExperiment& e : history)
    if (failed_candidate(e)) failed.push_back(&e);
  if (failed.size() > kFailuresShown) failed.erase(failed.begin(), failed.end() - kFailuresShown);
  std::vector<std::string> out;
  for (const PastExperiment* e : failed) out.push_back(one_failure(*e, best_source));
  if (!history.empty() && history.back().correctness == "NO_PROPOSAL")
    out.push_back("#" + std::to_string(history.back().experiment) + " your reply could not be used | why: " +
                  quoted_line(history.back().failure, kMessageBytes));
  return out;
}

}  // namespace ak
