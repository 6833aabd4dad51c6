#include "kernels_cuda/launch_plan.hpp"

#include <algorithm>
#include <cctype>
#include <regex>
#include <set>

#include "common/parse_number.hpp"
#include "kernels_cuda/cpp_words.hpp"
#include "kernels_cuda/user_type.hpp"

namespace ak {

const char* scratch_elem_name(ScratchElem e) {
  switch (e) {
    case ScratchElem::T: return "T";
    case ScratchElem::Int: return "int";
    case ScratchElem::Int64: return "int64";
    default: return "float";
  }
}

const char* scratch_elem_cuda_type(ScratchElem e) {
  return e == ScratchElem::Int64 ? "long long" : scratch_elem_name(e);
}

size_t scratch_elem_bytes(ScratchElem e, DType d) {
  switch (e) {
    case ScratchElem::T: return dtype_size(d);
    case ScratchElem::Int64: return 8;
    default: return 4;
  }
}

std::vector<std::string> LaunchPlan::step_names() const {
  std::vector<std::string> names;
  for (auto& s : statements)
    if (s.kind == PlanStatement::Step) names.push_back(s.name);
  return names;
}

std::vector<const PlanStatement*> LaunchPlan::scratch() const {
  std::vector<const PlanStatement*> out;
  for (auto& s : statements)
    if (s.kind == PlanStatement::Scratch) out.push_back(&s);
  return out;
}

namespace {

const char* const kGrammar =
    "let NAME = EXPR; | scratch NAME float|T|int|int64[EXPR]; | step NAME grid(X[, Y[, Z]]) block(X[, Y[, Z]]) [smem(BYTES)];";

Error plan_error(const std::string& statement, const std::string& what) {
  const std::string shown = statement.size() > 240 ? statement.substr(0, 240) + " ..." : statement;
  return error("ak_launch: `" + shown + ";`: " + what);
}

/// A name a plan may define: an identifier that no kernel file, expression or spec already means.
std::string name_problem(const std::string& name) {
  static const std::regex id("[A-Za-z_][A-Za-z0-9_]{0,63}");
  if (!std::regex_match(name, id)) return "\"" + name + "\" is not a name: expected [A-Za-z_][A-Za-z0-9_]{0,63}";
  if (is_cpp_word(name) || name == "T" || name.rfind("ak_", 0) == 0)
    return "\"" + name + "\" is a C++ word or a name the contract owns (T, ak_*, __*): choose another";
  if (name == "ceil_div" || name == "min" || name == "max")
    return "\"" + name + "\" is a function of the expressions: choose another name";
  return "";
}

/// Spaces collapsed and trimmed: how a statement is named in messages.
std::string collapse(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (std::isspace((unsigned char)c)) {
      if (!out.empty() && out.back() != ' ') out += ' ';
    } else {
      out += c;
    }
  }
  if (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

/// A cursor over one statement (spaces collapsed).
class StatementReader {
 public:
  explicit StatementReader(const std::string& s) : s_(s) {}
  void skip() {
    while (i_ < s_.size() && s_[i_] == ' ') ++i_;
  }
  bool done() {
    skip();
    return i_ >= s_.size();
  }
  std::string word() {
    skip();
    size_t start = i_;
    while (i_ < s_.size() && (std::isalnum((unsigned char)s_[i_]) || s_[i_] == '_')) ++i_;
    return s_.substr(start, i_ - start);
  }
  bool eat(char c) {
    skip();
    if (i_ < s_.size() && s_[i_] == c) return ++i_, true;
    return false;
  }
  /// The text up to the ')' that closes an already eaten '(' (nested ones kept); nullopt if none.
  std::optional<std::string> parenthesised() {
    int depth = 1;
    for (size_t j = i_; j < s_.size(); ++j) {
      if (s_[j] == '(') ++depth;
      if (s_[j] == ')' && --depth == 0) {
        std::string inside = s_.substr(i_, j - i_);
        i_ = j + 1;
        return inside;
      }
    }
    return std::nullopt;
  }
  std::string rest() {
    skip();
    std::string r = s_.substr(i_);
    i_ = s_.size();
    return r;
  }
  std::string where() const { return i_ < s_.size() ? "'" + s_.substr(i_, 20) + "'" : "the end of the statement"; }

 private:
  const std::string& s_;
  size_t i_ = 0;
};

/// `text` split at the commas outside parentheses.
std::vector<std::string> arguments(const std::string& text) {
  std::vector<std::string> out(1);
  int depth = 0;
  for (char c : text) {
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if (c == ',' && depth == 0) out.emplace_back();
    else out.back() += c;
  }
  return out;
}

Status add_expression(PlanStatement& st, const std::string& text, const std::string& what) {
  if (collapse(text).empty()) return plan_error(st.text, what + " is empty: expected an integer expression");
  auto e = SpecExpression::parse(collapse(text));
  if (!e) return plan_error(st.text, what + ": " + e.error().message);
  st.exprs.push_back(std::move(*e));
  return ok();
}

Status read_let(StatementReader& r, PlanStatement& st) {
  st.kind = PlanStatement::Let;
  st.name = r.word();
  if (std::string why = name_problem(st.name); !why.empty()) return plan_error(st.text, "let " + why);
  if (!r.eat('=')) return plan_error(st.text, "found " + r.where() + " after let " + st.name + ": expected '='");
  return add_expression(st, r.rest(), "the value");
}

Status read_scratch(StatementReader& r, PlanStatement& st) {
  st.kind = PlanStatement::Scratch;
  st.name = r.word();
  if (std::string why = name_problem(st.name); !why.empty()) return plan_error(st.text, "scratch " + why);
  const std::string elem = r.word();
  static const std::vector<std::pair<std::string, ScratchElem>> elems{
      {"float", ScratchElem::Float}, {"T", ScratchElem::T}, {"int", ScratchElem::Int}, {"int64", ScratchElem::Int64}};
  auto it = std::find_if(elems.begin(), elems.end(), [&](auto& e) { return e.first == elem; });
  if (it == elems.end())
    return plan_error(st.text, "scratch " + st.name + " holds \"" + elem + "\": expected float, T, int or int64");
  st.elem = it->second;
  if (!r.eat('[')) return plan_error(st.text, "found " + r.where() + ": expected '[' and the element count");
  std::string rest = r.rest();
  if (rest.empty() || rest.back() != ']') return plan_error(st.text, "expected the element count to end with ']' and the statement with it");
  rest.pop_back();
  return add_expression(st, rest, "the element count");
}

Status read_step(StatementReader& r, PlanStatement& st) {
  st.kind = PlanStatement::Step;
  st.name = r.word();
  if (std::string why = name_problem(st.name); !why.empty()) return plan_error(st.text, "step " + why);
  std::vector<std::string> grid, block, smem;
  std::set<std::string> seen;
  while (!r.done()) {
    const std::string clause = r.word();
    if (clause != "grid" && clause != "block" && clause != "smem")
      return plan_error(st.text, "found " + (clause.empty() ? r.where() : "\"" + clause + "\"") + ": expected grid(...), block(...) or smem(...)");
    if (!seen.insert(clause).second) return plan_error(st.text, clause + "(...) is given twice");
    if (!r.eat('(')) return plan_error(st.text, "found " + r.where() + " after " + clause + ": expected '('");
    auto inside = r.parenthesised();
    if (!inside) return plan_error(st.text, clause + "( has no closing ')'");
    auto args = arguments(*inside);
    const size_t most = clause == "smem" ? 1 : 3;
    if (args.size() > most)
      return plan_error(st.text, clause + " has " + std::to_string(args.size()) + " values: expected " +
                                     (most == 1 ? "one (bytes of dynamic shared memory)" : "1 to 3 (x, y, z)"));
    (clause == "grid" ? grid : clause == "block" ? block : smem) = args;
  }
  if (grid.empty() || block.empty()) return plan_error(st.text, "a step needs grid(...) and block(...)");
  st.grid_dims = grid.size(), st.block_dims = block.size(), st.has_smem = !smem.empty();
  const char* axes = "xyz";
  for (size_t i = 0; i < grid.size(); ++i)
    if (auto s = add_expression(st, grid[i], std::string("grid.") + axes[i]); !s) return s;
  for (size_t i = 0; i < block.size(); ++i)
    if (auto s = add_expression(st, block[i], std::string("block.") + axes[i]); !s) return s;
  if (!smem.empty())
    if (auto s = add_expression(st, smem[0], "smem"); !s) return s;
  return ok();
}

Status check_characters(const std::string& text) {
  for (size_t i = 0; i < text.size(); ++i) {
    const unsigned char c = (unsigned char)text[i];
    if (c == '\n' || c == '\t' || c == '\r' || (c >= 0x20 && c < 0x7f)) continue;
    static const char* hex = "0123456789abcdef";
    return error(std::string("ak_launch: byte 0x") + hex[c >> 4] + hex[c & 15] + " at character " + std::to_string(i + 1) +
                 ": expected printable ASCII (" + kGrammar + ")");
  }
  return ok();
}

}  // namespace

Result<LaunchPlan> parse_launch_plan(const std::string& text) {
  if (text.size() > kMaxPlanBytes)
    return error("ak_launch is " + std::to_string(text.size()) + " bytes: expected at most " + std::to_string(kMaxPlanBytes));
  if (auto s = check_characters(text); !s) return s.error();
  LaunchPlan plan;
  plan.text = text;
  size_t start = 0;
  std::set<std::string> names;
  size_t counts[3] = {0, 0, 0};
  const size_t limits[3] = {kMaxPlanLets, kMaxPlanScratch, kMaxPlanSteps};
  const char* kinds[3] = {"let", "scratch", "step"};
  for (size_t semi = text.find(';'); ; semi = text.find(';', start)) {
    const std::string piece = collapse(text.substr(start, semi == std::string::npos ? std::string::npos : semi - start));
    if (semi == std::string::npos) {
      if (!piece.empty())
        return error("ak_launch: `" + piece.substr(0, 200) + "` does not end with ';': expected every statement to (" + kGrammar + ")");
      break;
    }
    start = semi + 1;
    if (piece.empty())
      return error("ak_launch: statement " + std::to_string(plan.statements.size() + 1) + " is empty (';' twice): expected " + kGrammar);
    PlanStatement st;
    st.text = piece;
    StatementReader r(st.text);
    const std::string keyword = r.word();
    Status read = keyword == "let" ? read_let(r, st) : keyword == "scratch" ? read_scratch(r, st)
                  : keyword == "step" ? read_step(r, st)
                                      : plan_error(st.text, "starts with \"" + keyword.substr(0, 40) + "\": expected " + kGrammar);
    if (!read) return read.error();
    if (!names.insert(st.name).second)
      return plan_error(st.text, "\"" + st.name + "\" is defined twice: every let, scratch and step needs its own name");
    if (++counts[st.kind] > limits[st.kind])
      return plan_error(st.text, "more than " + std::to_string(limits[st.kind]) + " " + kinds[st.kind] + " statements");
    plan.statements.push_back(std::move(st));
  }
  if (counts[PlanStatement::Step] == 0) return error(std::string("ak_launch declares no step: expected 1 to 16 (") + kGrammar + ")");
  return plan;
}

std::map<std::string, int64_t> plan_values(const UserTypeSpec& spec, const Shape& shape) {
  std::map<std::string, int64_t> v;
  for (auto& [name, text] : spec.fixed)
    if (auto n = parse_integer(text)) v[name] = *n;
  for (size_t i = 0; i < spec.dims.size() && i < shape.size(); ++i) v[spec.dims[i]] = shape[i];
  return v;
}

namespace {

Status check_step(const PlanStatement& st, const std::vector<int64_t>& got, const LaunchLimits& l, StepLaunch& out) {
  const char* axes = "xyz";
  const int64_t grid_max[3] = {l.max_grid_x, l.max_grid_y, l.max_grid_z};
  const int64_t block_max[3] = {l.max_block_x, l.max_block_y, l.max_block_z};
  size_t k = 0;
  for (size_t i = 0; i < st.grid_dims; ++i, ++k) {
    if (got[k] < 1 || got[k] > grid_max[i])
      return plan_error(st.text, std::string("grid.") + axes[i] + " = " + st.exprs[k].text() + " = " + std::to_string(got[k]) +
                                     ": expected 1 to " + std::to_string(grid_max[i]));
    out.grid[i] = got[k];
  }
  int64_t threads = 1;
  for (size_t i = 0; i < st.block_dims; ++i, ++k) {
    if (got[k] < 1 || got[k] > block_max[i])
      return plan_error(st.text, std::string("block.") + axes[i] + " = " + st.exprs[k].text() + " = " + std::to_string(got[k]) +
                                     ": expected 1 to " + std::to_string(block_max[i]));
    out.block[i] = got[k];
    threads *= got[k];
  }
  if (threads > l.max_block_threads)
    return plan_error(st.text, "the block has " + std::to_string(threads) + " threads: expected at most " + std::to_string(l.max_block_threads));
  if (st.has_smem) {
    out.smem = got[k];
    if (out.smem < 0 || out.smem > l.max_dynamic_smem)
      return plan_error(st.text, "smem = " + st.exprs[k].text() + " = " + std::to_string(out.smem) + " bytes: expected 0 to " +
                                     std::to_string(l.max_dynamic_smem) + " (the device's opt-in maximum of dynamic shared memory per block)");
  }
  return ok();
}

}  // namespace

Result<PlanAtShape> evaluate_launch_plan(const LaunchPlan& plan, const std::map<std::string, int64_t>& given, DType d,
                                           const LaunchLimits& limits) {
  std::map<std::string, int64_t> values = given;
  PlanAtShape out;
  uint64_t total = 0;
  for (const PlanStatement& st : plan.statements) {
    std::vector<int64_t> got;
    for (const SpecExpression& e : st.exprs) {
      auto v = e.evaluate_int(values);
      if (!v) return plan_error(st.text, v.error().message);
      got.push_back(*v);
    }
    switch (st.kind) {
      case PlanStatement::Let: values[st.name] = got[0]; break;
      case PlanStatement::Scratch: {
        if (got[0] < 1)
          return plan_error(st.text, "scratch " + st.name + " has " + st.exprs[0].text() + " = " + std::to_string(got[0]) +
                                         " elements: expected at least 1");
        const uint64_t elem = scratch_elem_bytes(st.elem, d);
        if (uint64_t(got[0]) > limits.scratch_cap_bytes / elem || total + uint64_t(got[0]) * elem > limits.scratch_cap_bytes)
          return plan_error(st.text, "scratch " + st.name + " takes " + std::to_string(got[0]) + " x " + std::to_string(elem) +
                                         " bytes, and the scratch before it " + std::to_string(total) + ": above the cap of " +
                                         std::to_string(limits.scratch_cap_bytes >> 20) + " MiB in all ([harness] scratch_cap_mib)");
        total += uint64_t(got[0]) * elem;
        out.scratch_bytes.push_back(uint64_t(got[0]) * elem);
        break;
      }
      case PlanStatement::Step: {
        StepLaunch step;
        step.name = st.name;
        if (auto s = check_step(st, got, limits, step); !s) return s.error();
        out.steps.push_back(step);
        break;
      }
    }
  }
  return out;
}

namespace {

std::string shape_words(const UserTypeSpec& spec, const Shape& shape) {
  std::string s;
  for (size_t i = 0; i < spec.dims.size() && i < shape.size(); ++i)
    s += (s.empty() ? "" : ", ") + spec.dims[i] + " = " + std::to_string(shape[i]);
  return s;
}

/// Every name each statement reads defined before it; its own name free of the spec's.
Status check_names(const LaunchPlan& plan, const UserTypeSpec& spec) {
  std::set<std::string> known, taken, non_integer;
  for (auto& d : spec.dims) known.insert(d), taken.insert(d);
  for (auto& [name, text] : spec.fixed) {
    taken.insert(name);
    (parse_integer(text) ? known : non_integer).insert(name);
  }
  for (auto& t : spec.tensors) taken.insert(t.name);
  for (const PlanStatement& st : plan.statements) {
    for (const SpecExpression& e : st.exprs)
      for (const std::string& name : e.names()) {
        if (known.count(name)) continue;
        if (non_integer.count(name))
          return plan_error(st.text, "reads '" + name + "', a [fixed] global that is not an integer: expected integers only");
        std::string list;
        for (auto& k : known) list += (list.empty() ? "" : ", ") + k;
        return plan_error(st.text, "reads '" + name + "', which is no dim, integer [fixed] global nor let before it (known here: " +
                                       list + ")");
      }
    if (taken.count(st.name))
      return plan_error(st.text, "\"" + st.name + "\" is already a dim, a [fixed] global or a tensor of the spec: choose another name");
    if (st.kind == PlanStatement::Let) known.insert(st.name);
  }
  return ok();
}

}  // namespace

Status check_launch_plan(const LaunchPlan& plan, const UserTypeSpec& spec, const LaunchLimits& limits) {
  if (auto s = check_names(plan, spec); !s) return s;
  std::vector<std::pair<std::string, Shape>> shapes{{"the smoke shape", spec.smoke}};
  for (size_t i = 0; i < spec.sweep.size(); ++i) shapes.push_back({"sweep shape " + std::to_string(i + 1), spec.sweep[i]});
  shapes.push_back({"the stability shape", spec.stability});
  shapes.push_back({"the determinism shape", spec.determinism});
  for (size_t i = 0; i < spec.edge.size(); ++i) shapes.push_back({"edge shape " + std::to_string(i + 1), spec.edge[i]});
  if (!spec.bench.empty()) shapes.push_back({"the bench shape", spec.bench});
  for (auto& [what, shape] : shapes) {
    if (shape.size() != spec.dims.size()) continue;
    for (DType d : spec.dtypes) {
      auto planned = evaluate_launch_plan(plan, plan_values(spec, shape), d, limits);
      if (!planned)
        return error("at " + what + " (" + shape_words(spec, shape) + ", " + dtype_name(d) + "): " + planned.error().message);
    }
  }
  return ok();
}

// ---- the plan's text in a kernel file's source ----------------------------------------------------

namespace {

/// A small lexer over CUDA source: enough to find `ak_launch [ ] = "..." "...";` outside comments,
/// strings and character literals.
class SourceScanner {
 public:
  explicit SourceScanner(const std::string& s) : s_(s) {}

  /// Skips spaces and comments.
  void skip() {
    while (i_ < s_.size()) {
      if (std::isspace((unsigned char)s_[i_])) ++i_;
      else if (s_.compare(i_, 2, "//") == 0) i_ = std::min(s_.find('\n', i_), s_.size());
      else if (s_.compare(i_, 2, "/*") == 0) {
        const size_t end = s_.find("*/", i_ + 2);
        i_ = end == std::string::npos ? s_.size() : end + 2;
      } else break;
    }
  }
  bool at_end() const { return i_ >= s_.size(); }
  char peek() const { return i_ < s_.size() ? s_[i_] : '\0'; }
  size_t pos() const { return i_; }

  /// Skips one quoted literal starting at i_ (a string or a character), escapes included.
  void skip_quoted() {
    const char q = s_[i_++];
    while (i_ < s_.size() && s_[i_] != q && s_[i_] != '\n') i_ += s_[i_] == '\\' ? 2 : 1;
    i_ = std::min(i_ + 1, s_.size());
  }
  /// Skips a raw string R"delim( ... )delim", i_ at its '"'.
  void skip_raw() {
    const size_t open = s_.find('(', i_);
    if (open == std::string::npos) return void(i_ = s_.size());
    const std::string close = ")" + s_.substr(i_ + 1, open - i_ - 1) + "\"";
    const size_t end = s_.find(close, open);
    i_ = end == std::string::npos ? s_.size() : end + close.size();
  }
  std::string identifier() {
    const size_t start = i_;
    while (i_ < s_.size() && (std::isalnum((unsigned char)s_[i_]) || s_[i_] == '_')) ++i_;
    return s_.substr(start, i_ - start);
  }
  /// A number, digit separators included (1'000 is no character literal).
  void skip_number() {
    while (i_ < s_.size() && (std::isalnum((unsigned char)s_[i_]) || s_[i_] == '_' || s_[i_] == '.' || s_[i_] == '\'' ||
                              ((s_[i_] == '+' || s_[i_] == '-') && (s_[i_ - 1] == 'e' || s_[i_ - 1] == 'E' || s_[i_ - 1] == 'p' || s_[i_ - 1] == 'P'))))
      ++i_;
  }
  bool eat(char c) {
    skip();
    if (peek() == c) return ++i_, true;
    return false;
  }
  void advance() { ++i_; }
  /// One "..." literal's characters, i_ at its '"'; an error for escapes a plan has no use for.
  Result<std::string> string_literal() {
    std::string out;
    ++i_;
    while (i_ < s_.size() && s_[i_] != '"') {
      char c = s_[i_++];
      if (c == '\n') return error("ak_launch: a string literal runs past the end of its line");
      if (c == '\\') {
        const char e = i_ < s_.size() ? s_[i_++] : '\0';
        switch (e) {
          case 'n': c = '\n'; break;
          case 't': c = '\t'; break;
          case 'r': c = '\r'; break;
          case '\\': c = '\\'; break;
          case '"': c = '"'; break;
          case '\'': c = '\''; break;
          default:
            return error(std::string("ak_launch: the escape \\") + (std::isprint((unsigned char)e) ? std::string(1, e) : "?") +
                         " in its text: write the plan in plain characters");
        }
      }
      out += c;
    }
    if (i_ >= s_.size()) return error("ak_launch: a string literal has no closing '\"'");
    ++i_;
    return out;
  }

 private:
  const std::string& s_;
  size_t i_ = 0;
};

const char* const kLiteralsOnly =
    "write ak_launch as string literals only: extern \"C\" __constant__ char ak_launch[] = \"let ...;\" \"step ...;\";";

/// At the identifier ak_launch just read: its initializer when this is its definition, nullopt
/// when it is another use of the name.
Result<std::optional<std::string>> definition(SourceScanner& sc) {
  if (!sc.eat('[')) return std::optional<std::string>();
  sc.skip();
  while (std::isdigit((unsigned char)sc.peek())) sc.advance();
  if (!sc.eat(']')) return std::optional<std::string>();
  if (!sc.eat('=')) return std::optional<std::string>();
  if (sc.peek() == '=') return std::optional<std::string>();   // ak_launch[i] == ...
  std::string text;
  int literals = 0;
  for (sc.skip(); sc.peek() == '"'; sc.skip(), ++literals) {
    auto piece = sc.string_literal();
    if (!piece) return piece.error();
    text += *piece;
    if (text.size() > kMaxPlanBytes)
      return error("ak_launch is over " + std::to_string(kMaxPlanBytes) + " bytes: expected at most " + std::to_string(kMaxPlanBytes));
  }
  if (literals == 0 || !sc.eat(';')) return error(std::string("ak_launch: ") + kLiteralsOnly);
  return std::optional<std::string>(std::move(text));
}

}  // namespace

Result<std::optional<std::string>> launch_plan_source_text(const std::string& source) {
  SourceScanner sc(source);
  std::optional<std::string> found;
  for (sc.skip(); !sc.at_end(); sc.skip()) {
    const char c = sc.peek();
    if (c == '"' || c == '\'') {
      sc.skip_quoted();
    } else if (std::isdigit((unsigned char)c)) {
      sc.skip_number();
    } else if (std::isalpha((unsigned char)c) || c == '_') {
      const std::string id = sc.identifier();
      if (sc.peek() == '"' && (id == "R" || id == "u8R" || id == "uR" || id == "UR" || id == "LR")) {
        sc.skip_raw();
      } else if (id == kLaunchPlanSymbol) {
        auto text = definition(sc);
        if (!text) return text.error();
        if (!*text) continue;
        if (found) return error("ak_launch is defined twice in the file: expected one plan");
        found = std::move(*text);
      }
    } else {
      sc.advance();
    }
  }
  return found;
}

Result<std::vector<std::string>> launch_step_names(const std::string& source) {
  auto text = launch_plan_source_text(source);
  if (!text) return text.error();
  if (!*text) return std::vector<std::string>{};
  auto plan = parse_launch_plan(**text);
  if (!plan) return plan.error();
  return plan->step_names();
}

}  // namespace ak
