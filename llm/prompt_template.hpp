#pragma once
/// The prompt texts in prompts/ (embedded at build time) and the small renderer that fills their
/// {{placeholders}}.
#include <map>
#include <string>

#include "common/result.hpp"

namespace ak {

/// A file of prompts/ by its path there, e.g. "system.txt" or "notes/softmax.txt"; nullptr when
/// there is none.
const std::string* prompt_text(const std::string& name);

/// Fills every {{name}}; a placeholder without a value is an Error naming it and the template.
Result<std::string> render(const std::string& template_name, const std::string& text,
                           const std::map<std::string, std::string>& values);

}  // namespace ak
