#include "llm/prompt_template.hpp"

namespace ak {

const std::map<std::string, std::string>& embedded_prompts();

const std::string* prompt_text(const std::string& name) {
  auto& all = embedded_prompts();
  auto it = all.find(name);
  return it == all.end() ? nullptr : &it->second;
}

Result<std::string> render(const std::string& template_name, const std::string& text,
                           const std::map<std::string, std::string>& values) {
  std::string out;
  size_t pos = 0;
  while (true) {
    size_t open = text.find("{{", pos);
    if (open == std::string::npos) break;
    size_t close = text.find("}}", open);
    if (close == std::string::npos) break;
    std::string name = text.substr(open + 2, close - open - 2);
    auto it = values.find(name);
    if (it == values.end())
      return error("the prompt template " + template_name + " uses {{" + name + "}}, which has no value");
    out += text.substr(pos, open - pos) + it->second;
    pos = close + 2;
  }
  return out + text.substr(pos);
}

}  // namespace ak
