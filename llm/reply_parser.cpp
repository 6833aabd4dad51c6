#include "llm/reply_parser.hpp"

#include <sstream>
#include <vector>

#include "common/untrusted_text.hpp"

namespace ak {
namespace {

bool is_code_fence(const std::string& info) {
  return info == "cuda" || info == "cpp" || info == "c++" || info == "cu" || info == "c";
}

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r"), e = s.find_last_not_of(" \t\r");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

}  // namespace

Result<ProposedEdit> parse_reply(const std::string& reply, bool truncated, const std::string& entry) {
  if (truncated)
    return error("the reply was cut off at the output token limit, so its kernel file is incomplete "
                 "(raise [llm] max_output_tokens, or ask for shorter files)");
  std::istringstream in(reply);
  std::string line, description, block;
  bool inside = false, code = false, found = false;
  std::string current;
  while (std::getline(in, line)) {
    std::string t = trim(line);
    if (!inside && t.rfind("```", 0) == 0) {
      inside = true;
      code = is_code_fence(trim(t.substr(3)));
      current.clear();
      continue;
    }
    if (inside && t == "```") {
      inside = false;
      if (code) {
        block = current;
        found = true;
      }
      continue;
    }
    if (inside) {
      current += line + "\n";
    } else if (description.empty() && !t.empty()) {
      description = t;
      for (const char* prefix : {"Description:", "description:", "**Description:**", "DESCRIPTION:"})
        if (description.rfind(prefix, 0) == 0) description = trim(description.substr(std::string(prefix).size()));
    }
  }
  if (!found)
    return error(inside ? "the reply's last code block is not closed (the answer was cut short)"
                        : "the reply has no ```cuda code block with the kernel file");
  if (trim(block).empty()) return error("the reply's code block is empty");
  // A user type's file with a launch plan names its own steps (the harness checks them).
  if (block.find(entry) == std::string::npos && block.find("ak_launch") == std::string::npos)
    return error("the proposed file does not define the entry point '" + entry + "' (nor an ak_launch plan of steps)");
  if (auto problem = kernel_file_problem(block)) return error("the proposed file was refused: " + *problem);
  description = untrusted_line(description, kDescriptionBytes);
  if (description.empty()) description = "(no description given)";
  return ProposedEdit{description, block};
}

}  // namespace ak
