#include "daemon/commands/arg_parser.hpp"

namespace ak {

ArgParser& ArgParser::option(const std::string& name, const std::string& value_name, const std::string& help,
                             std::string* out) {
  opts_.push_back({name, value_name, help, out, nullptr});
  return *this;
}

ArgParser& ArgParser::flag(const std::string& name, const std::string& help, bool* out) {
  opts_.push_back({name, "", help, nullptr, out});
  return *this;
}

ArgParser& ArgParser::positional(const std::string& name, const std::string& help, std::string* out, bool required) {
  pos_.push_back({name, help, out, required});
  return *this;
}

ArgParser& ArgParser::positionals(const std::string& name, const std::string& help, std::vector<std::string>* out,
                                  bool required) {
  many_ = {name, help, nullptr, required};
  many_out_ = out;
  return *this;
}

ArgParser& ArgParser::rest(const std::string& name, const std::string& help, std::vector<std::string>* out) {
  rest_name_ = name;
  rest_help_ = help;
  rest_ = out;
  return *this;
}

Status ArgParser::parse(const std::vector<std::string>& args, bool& help_requested) {
  help_requested = false;
  size_t next_pos = 0;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--help" || a == "-h") {
      help_requested = true;
      return ok();
    }
    if (a == "--" && rest_) {
      rest_->assign(args.begin() + long(i) + 1, args.end());
      break;
    }
    if (a.rfind("--", 0) == 0) {
      std::string name = a.substr(2), value;
      bool has_value = false;
      if (auto eq = name.find('='); eq != std::string::npos) {
        value = name.substr(eq + 1);
        name = name.substr(0, eq);
        has_value = true;
      }
      const Opt* opt = nullptr;
      for (auto& o : opts_)
        if (o.name == name) opt = &o;
      if (!opt) return error("unknown option --" + name + " (see --help)");
      if (opt->flag) {
        if (has_value) return error("--" + name + " takes no value");
        *opt->flag = true;
        continue;
      }
      if (!has_value) {
        if (i + 1 >= args.size()) return error("--" + name + " needs a value: --" + name + " " + opt->value_name);
        value = args[++i];
      }
      *opt->value = value;
      continue;
    }
    if (next_pos >= pos_.size()) {
      if (!many_out_) return error("unexpected argument '" + a + "' (see --help)");
      many_out_->push_back(a);
      continue;
    }
    *pos_[next_pos++].out = a;
  }
  for (size_t p = next_pos; p < pos_.size(); ++p)
    if (pos_[p].required) return error("missing " + pos_[p].name + " (usage: " + usage_ + ")");
  if (many_out_ && many_.required && many_out_->empty())
    return error("missing " + many_.name + " (usage: " + usage_ + ")");
  return ok();
}

namespace {
/// Spaces that bring `text` to `column`, at least two (a long name pushes its help right).
std::string pad(const std::string& text, size_t column) {
  return std::string(text.size() + 2 <= column ? column - text.size() : 2, ' ');
}
}  // namespace

std::string ArgParser::help() const {
  std::string h = "usage: " + usage_ + "\n\n" + description_ + "\n";
  if (!pos_.empty() || rest_ || many_out_) h += "\narguments:\n";
  std::vector<Pos> shown = pos_;
  if (many_out_) shown.push_back(many_);
  for (auto& p : shown) h += "  " + p.name + pad(p.name, 22) + p.help + "\n";
  if (rest_) h += "  -- " + rest_name_ + pad(rest_name_, 19) + rest_help_ + "\n";
  h += "\noptions:\n";
  for (auto& o : opts_) {
    std::string left = "--" + o.name + (o.value_name.empty() ? "" : " " + o.value_name);
    h += "  " + left + pad(left, 22) + o.help + "\n";
  }
  h += "  --help                show this help\n";
  return h;
}

}  // namespace ak
