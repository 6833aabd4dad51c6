#include "daemon/proposers/experiment_ledger.hpp"

#include <cctype>
#include <cmath>
#include <map>

#include <nlohmann/json.hpp>

#include "common/format.hpp"
#include "common/text_escape.hpp"
#include "common/untrusted_text.hpp"
#include "daemon/run_folder/kernel_progress.hpp"

namespace ak {

std::string quoted_line(const std::string& text, size_t max_bytes) {
  return json_dump(nlohmann::json(untrusted_line(text, max_bytes)));
}

bool is_daemon_event(const PastExperiment& e) {
  const std::string& c = e.correctness;
  return c == kBestJudgedAgain || c == kBestDemoted || c == kBestReplaced || c == kHarnessError || c == "NO_PROPOSAL" ||
         c == "ERROR" || c == "IN_FLIGHT";
}

bool is_broken_proposal(const std::string& correctness) {
  return correctness == "COMPILE_ERROR" || correctness == "NO_PROPOSAL";
}

namespace {

/// The words of an idea, for telling one tried twice: case and spacing do not make it new.
std::string idea_key(const std::string& description) {
  std::string k;
  for (char c : description) {
    if (std::isspace((unsigned char)c)) {
      if (!k.empty() && k.back() != ' ') k += ' ';
    } else {
      k += char(std::tolower((unsigned char)c));
    }
  }
  while (!k.empty() && k.back() == ' ') k.pop_back();
  return k;
}

std::string verdict_fields(const PastExperiment& e) {
  std::string f = e.correctness;
  if (e.correctness == "PASS") {
    f += format_numbers(" %.2f us", e.latency_us);
    if (e.paired_ratio > 0) {
      f += format_numbers(", x%.3f +- %.3f of the best beside it", e.paired_ratio, e.paired_noise);
      if (std::abs(1 - e.paired_ratio) <= e.paired_noise) f += " (within noise: not slower, not proven faster)";
    }
    if (e.registers >= 0) f += ", " + std::to_string(e.registers) + " regs";
    if (e.spill_bytes > 0) f += ", " + std::to_string(e.spill_bytes) + " B spilled";
    if (e.smem_bytes > 0) f += ", " + std::to_string(e.smem_bytes) + " B smem";
  }
  if (e.predicted_us > 0) f += format_numbers(" (predicted %.2f us)", e.predicted_us);
  if (e.move == MoveKind::Baseline) f += e.kept ? ", the baseline" : ", not passing";
  else if (is_broken_proposal(e.correctness) && e.move != MoveKind::Structure) f += ", broken (not counted as a revert)";
  else f += e.standing ? ", kept (the best's lineage)" : e.kept ? ", kept, later demoted" : ", reverted";
  if (e.move == MoveKind::Structure) f += ", a structure switch";
  return f;
}

}  // namespace

std::vector<std::string> ledger_lines(const std::vector<PastExperiment>& history) {
  struct Idea {
    const PastExperiment* last = nullptr;
    std::vector<long long> numbers;
  };
  std::vector<Idea> ideas;
  std::map<std::string, size_t> by_key;
  for (const PastExperiment& e : history) {
    if (is_daemon_event(e)) continue;
    const std::string key = e.move == MoveKind::Baseline ? "#baseline " + std::to_string(e.experiment) : idea_key(e.description);
    auto it = by_key.find(key);
    if (it == by_key.end()) it = by_key.emplace(key, ideas.size()).first, ideas.push_back({});
    Idea& idea = ideas[it->second];
    // A kept try of an idea is the one to show; otherwise the latest.
    if (!idea.last || !idea.last->standing) idea.last = &e;
    idea.numbers.push_back(e.experiment);
  }
  std::vector<std::string> lines;
  for (const Idea& idea : ideas) {
    const PastExperiment& e = *idea.last;
    std::string line = std::string(e.standing ? "* " : "- ") + "#" + std::to_string(e.experiment) + " " + verdict_fields(e);
    if (idea.numbers.size() > 1) {
      line += "; tried " + std::to_string(idea.numbers.size()) + " times (";
      for (size_t i = 0; i < idea.numbers.size(); ++i) line += (i ? ", #" : "#") + std::to_string(idea.numbers[i]);
      line += ")";
    }
    line += " | idea: " + quoted_line(e.description, kDescriptionBytes);
    if (!e.failure.empty()) line += " | why: " + quoted_line(e.failure, 160);
    lines.push_back(line);
  }
  return lines;
}

}  // namespace ak
