#include <catch2/catch.hpp>

#include "llm/prompt_budget.hpp"

using namespace ak;

namespace {

size_t total(const std::map<std::string, std::string>& v) {
  size_t n = 0;
  for (auto& [k, text] : v) n += text.size();
  return n;
}

}  // namespace

TEST_CASE("a prompt over its limit loses the least useful parts first and says what it left out", "[prompts]") {
  std::vector<PromptPart> parts;
  PromptPart ledger{"ledger", 1, "oldest ledger lines"};
  for (int i = 0; i < 50; ++i) ledger.entries.push_back("- #" + std::to_string(i) + " PASS 10.00 us, reverted | idea: \"x\"");
  parts.push_back(ledger);
  PromptPart best{"best_file", 9, "the current best file"};
  best.is_text = true;
  best.fence_info = "cuda";
  best.text = std::string(3000, 'b');
  best.cap = best.text.size() + 64;
  parts.push_back(best);
  const size_t whole = total(part_values(parts));
  const std::string said = fit_prompt_parts(parts, whole - 500, total);
  CHECK(total(part_values(parts)) <= whole - 500);
  CHECK(parts[0].dropped > 0);
  CHECK(parts[1].cut_bytes == 0);   // the best file is the last thing cut
  CHECK_THAT(said, Catch::Contains("left out: " + std::to_string(parts[0].dropped) + " of the oldest ledger lines"));
  CHECK_THAT(part_values(parts)["ledger"], Catch::StartsWith("(" + std::to_string(parts[0].dropped) + " older entries left out") &&
                                               Catch::EndsWith("- #49 PASS 10.00 us, reverted | idea: \"x\""));
}

TEST_CASE("when lists are gone, a text is cut at its end inside its fence, never below its floor", "[prompts]") {
  std::vector<PromptPart> parts;
  PromptPart ref{"reference_source", 1, "the reference source"};
  ref.is_text = true;
  ref.fence_info = "python";
  ref.text = std::string(20000, 'r');
  ref.cap = 20000;
  parts.push_back(ref);
  const std::string said = fit_prompt_parts(parts, 5000, total);
  const std::string v = part_values(parts)["reference_source"];
  CHECK(v.size() <= 5000);
  CHECK_THAT(v, Catch::StartsWith("```python\n") && Catch::EndsWith(" bytes]\n```\n"));
  CHECK_THAT(said, Catch::Contains("the end of the reference source"));
  CHECK(fit_prompt_parts(parts, 10, total).find("reference") != std::string::npos);   // cut to its floor, and said
  CHECK(part_values(parts)["reference_source"].size() >= kSmallestTextPart / 2);
}

TEST_CASE("a prompt within its limit is left whole and nothing is said", "[prompts]") {
  std::vector<PromptPart> parts{{"ledger", 1, "oldest ledger lines"}};
  parts[0].entries = {"a", "b"};
  CHECK(fit_prompt_parts(parts, 1000, total).empty());
  CHECK(part_values(parts)["ledger"] == "a\nb");
}
