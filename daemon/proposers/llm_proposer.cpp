#include "daemon/proposers/llm_proposer.hpp"

#include "common/atomic_write.hpp"
#include "common/format.hpp"
#include "common/text_escape.hpp"
#include "common/untrusted_text.hpp"

#include <cstdio>
#include <filesystem>

#include "daemon/proposers/experiment_ledger.hpp"
#include "daemon/proposers/failure_feedback.hpp"
#include "daemon/proposers/prompt_guidance.hpp"
#include "kernels_cuda/registry.hpp"
#include "kernels_cuda/variants.hpp"
#include "llm/prompt_budget.hpp"
#include "llm/prompt_fence.hpp"
#include "llm/prompt_template.hpp"
#include "llm/reply_parser.hpp"

namespace ak {
namespace {

std::string tolerances(const KernelSpec& spec) {
  std::string t;
  for (DType d : spec.dtypes) t += (t.empty() ? "" : ", ") + std::string(dtype_name(d)) + " " + format_numbers("%g", spec.tolerance(d).atol);
  return t;
}

/// "__half, __nv_bfloat16 and float": the instantiations the harness asks for.
std::string instantiations(const KernelSpec& spec) {
  std::string t;
  for (size_t i = 0; i < spec.dtypes.size(); ++i)
    t += std::string(i == 0 ? "" : i + 1 == spec.dtypes.size() ? " and " : ", ") + dtype_cuda_type(spec.dtypes[i]);
  return t;
}

/// One line per structure of the type: the model learns which layouts exist and what each changes,
/// without their code in every prompt.
std::string structures_text(const std::string& type) {
  std::string t;
  for (auto& v : kernel_variants(type)) t += "- " + v.name + ": " + v.story + "\n";
  return t.empty() ? "(none)" : t.substr(0, t.size() - 1);
}

/// Proposals judged on other GPUs right now: the model should not propose them again.
std::vector<std::string> in_flight_lines(const ProposalContext& ctx) {
  std::vector<std::string> lines;
  for (auto& e : ctx.in_flight)
    lines.push_back("- being judged now on another GPU, propose something different | idea: " +
                    (e.description.empty() ? std::string("(a proposal still being written)") : quoted_line(e.description, kDescriptionBytes)));
  return lines;
}

/// The file of the library structure the model asked to see, or why there is none.
std::string shown_variant_text(const ProposalContext& ctx) {
  if (ctx.shown_variant.empty()) return "";
  for (auto& v : kernel_variants(ctx.spec->type))
    if (v.name == ctx.shown_variant)
      return "The file of structure " + v.name + ", which you asked to see (adapt it, or take its ideas):\n" + fenced(*v.source, "cuda", 1 << 20);
  return "You asked to see structure " + quoted_line(ctx.shown_variant, 80) + ": the library has no structure of that name for " +
         ctx.spec->type + ".\n";
}

/// A user type's tensors and dims, each with its sizes at the timed shape.
std::string tensors_text(const UserTypeSpec& u, const Shape& shape) {
  std::string t;
  for (const UserTensor& x : u.tensors) {
    std::string names, sizes;
    for (const SizeTerm& term : x.shape) names += (names.empty() ? "" : ", ") + term.text();
    t += "- " + x.name + ": " + tensor_role_name(x.role) + ", " + (x.role == TensorRole::Output ? "" : "const ") +
         (x.int64 ? "long long*" : "T*") + ", [" + names + "] = [" + shape_str(u.sizes(x, shape)) + "]";
    if (x.low && x.high) t += ", values in [" + x.low->text() + ", " + x.high->text() + ")";
    t += "\n";
  }
  for (size_t i = 0; i < u.dims.size(); ++i)
    t += "- " + u.dims[i] + ": int" + (i < shape.size() ? " = " + std::to_string(shape[i]) : "") + "\n";
  for (auto& [name, value] : u.fixed) t += "- (not an argument) the module's " + name + " = " + value + "\n";
  return t.substr(0, t.size() - 1);
}

/// The message of an experiment on a user type: its PyTorch reference, its tensors and grid rule,
/// and the current best file, or the empty one the first file is written from.
Result<std::string> user_type_message(const ProposalContext& ctx, const UserTypeSpec& u,
                                      const std::map<std::string, std::string>& values) {
  const std::string* message = prompt_text("user-type.txt");
  const std::string* best = prompt_text("user-type-best.txt");
  const std::string* first = prompt_text("user-type-first.txt");
  if (!message || !best || !first) return error("the prompts of user types are missing from this build of autokernel");
  auto current = ctx.first_file ? render("user-type-first.txt", *first, values) : render("user-type-best.txt", *best, values);
  if (!current) return current.error();
  std::map<std::string, std::string> all = values;
  std::string dtypes;
  for (DType d : u.dtypes) dtypes += (dtypes.empty() ? "" : ", ") + std::string(dtype_name(d));
  all["kind"] = u.kind;
  all["dtypes"] = dtypes;
  all["tensors"] = tensors_text(u, ctx.shape);
  all["grid_rule"] = ctx.spec->launch_help;
  all["current_file"] = *current;
  return render("user-type.txt", *message, all);
}

}  // namespace

namespace {

/// The parts of the message that may be shortened to fit the prompt's size, least useful first.
std::vector<PromptPart> message_parts(const ProposalContext& ctx, const std::string* notes, const UserTypeSpec* user_type) {
  std::vector<std::string> ledger = ledger_lines(ctx.history);
  for (auto& line : in_flight_lines(ctx)) ledger.push_back(line);
  const std::string notes_text = notes ? *notes : "(none)";
  const std::string shown = shown_variant_text(ctx);
  std::vector<PromptPart> parts{
      list_part("ledger", 1, "oldest ledger lines", std::move(ledger), "(none yet)"),
      list_part("failures", 2, "oldest failures", failure_feedback(ctx.history, ctx.best_source), "(none)"),
      text_part("type_notes", 3, "the notes for this kernel type", notes_text, "", notes_text.size()),
      text_part("shown_variant", 4, "the structure's file you asked to see", shown, "", shown.size()),
      text_part("scratchpad", 5, "your scratchpad", ctx.scratchpad.empty() ? "(empty: write one)" : ctx.scratchpad, "text",
                kScratchpadBytes + 64)};
  if (user_type)
    parts.push_back(text_part("reference_source", 6, "the reference source", user_type->reference_source, "python", kReferenceSourceBytes));
  parts.push_back(text_part("best_file", 7, "the current best file", ctx.best_source, "cuda", ctx.best_source.size() + 64));
  return parts;
}

std::string unit_of(const ProposalContext& ctx) {
  if (!ctx.throughput_unit.empty()) return ctx.throughput_unit;
  return ctx.spec->metric == Metric::GBps ? "GB/s" : "TFLOPS";
}

}  // namespace

Result<ChatRequest> build_chat_request(const ProposalContext& ctx, int max_output_tokens) {
  const KernelSpec& spec = *ctx.spec;
  const std::string* contract = prompt_text("kernel-contract.txt");
  const std::string* system = prompt_text("system.txt");
  const std::string* experiment = prompt_text("experiment.txt");
  if (!contract || !system || !experiment) return error("the prompts are missing from this build of autokernel");
  const UserTypeSpec* user_type = find_user_type(spec.type);
  const std::string* notes = prompt_text(user_type ? "notes/kind-" + user_type->kind + ".txt" : "notes/" + spec.type + ".txt");
  if (user_type && !notes) return error("the notes of kind " + user_type->kind + " are missing from this build of autokernel");
  auto rendered_contract = render("kernel-contract.txt", *contract,
                                  {{"entry_signature", spec.abi()}, {"tolerances", tolerances(spec)},
                                   {"dtypes", instantiations(spec)}, {"launch_geometry", spec.launch_help}});
  if (!rendered_contract) return rendered_contract.error();
  auto sys = render("system.txt", *system,
                    {{"kernel_contract", *rendered_contract}, {"keep_threshold_pct", format_numbers("%g", ctx.keep_threshold * 100)}});
  if (!sys) return sys.error();
  const double floor_us = ctx.pct_peak > 0 ? ctx.best_us * ctx.pct_peak : 0;
  const std::string unit = unit_of(ctx);
  std::map<std::string, std::string> values{{"gpu", ctx.gpu.empty() ? "the run's GPU (its name comes with the first verdict)" : ctx.gpu},
                      {"arch", ctx.arch.empty() ? "its arch comes with the first verdict" : ctx.arch},
                      {"peak", ctx.peak > 0 ? format_numbers("%.0f ", ctx.peak) + unit
                                            : "not known yet (the harness measures this GPU's " + unit + " with the first verdict)"},
                      {"kernel_type", spec.type},
                      {"summary", spec.summary},
                      {"entry_signature", spec.abi()},
                      {"shape", shape_str(ctx.shape)},
                      {"shape_names", spec.shape_help()},
                      {"dtype", ctx.dtype},
                      {"best_us", format_numbers("%.2f", ctx.best_us)},
                      {"best_throughput", format_numbers("%.1f ", ctx.best_throughput) + unit},
                      {"pct_peak", format_numbers("%.1f%%", ctx.pct_peak * 100)},
                      {"bound", spec.metric == Metric::GBps ? "memory" : "compute"},
                      {"floor_us", format_numbers("%.2f", floor_us)},
                      {"baseline_us", format_numbers("%.2f", ctx.baseline_us)},
                      {"speedup", format_numbers("%.3fx", ctx.best_us > 0 ? ctx.baseline_us / ctx.best_us : 0)},
                      {"structure", variant_name(ctx.best_source)},
                      {"structures", structures_text(spec.type)},
                      {"budget", budget_text(ctx)},
                      {"phase", phase_text(ctx)},
                      {"limits", limits_text(ctx)}};
  std::vector<PromptPart> parts = message_parts(ctx, notes, user_type);
  // The message with the parts as they stand; the user type's message takes its own template.
  auto message = [&](const std::map<std::string, std::string>& part_text) -> Result<std::string> {
    std::map<std::string, std::string> all = values;
    for (auto& [k, v] : part_text) all[k] = v;
    if (!user_type) return render("experiment.txt", *experiment, all);
    return user_type_message(ctx, *user_type, all);
  };
  const size_t limit = ctx.max_prompt_bytes > 0 ? ctx.max_prompt_bytes : kDefaultMaxPromptBytes;
  const size_t reserve = 400;   // the line that says what was cut
  std::optional<Error> failed;
  const std::string cut = fit_prompt_parts(parts, limit > reserve ? limit - reserve : limit, [&](const auto& part_text) {
    auto m = message(part_text);
    if (!m) return failed = m.error(), size_t(0);
    return sys->size() + m->size();
  });
  if (failed) return *failed;
  auto user = message(part_values(parts));
  if (!user) return user.error();
  if (!cut.empty()) *user += "\n" + cut + "\n";
  return ChatRequest{*sys, *user, max_output_tokens};
}

LlmProposer::LlmProposer(LlmClient& client, std::string transcripts_dir)
    : client_(client), transcripts_dir_(std::move(transcripts_dir)) {}

Result<std::optional<Proposal>> LlmProposer::propose(const ProposalContext& ctx) {
  auto q = build_chat_request(ctx, client_.config().max_output_tokens);
  if (!q) return q.error();
  nlohmann::json transcript;
  auto reply = client_.ask(*q, &transcript);
  transcript["prompt"] = {{"system", q->system}, {"user", q->user}};
  Result<ProposedEdit> edit = reply ? parse_reply(reply->text, reply->truncated, ctx.spec->entry) : Result<ProposedEdit>(reply.error());
  transcript["outcome"] = edit ? "proposed: " + edit->description : "no usable proposal: " + edit.error().message;
  if (!transcripts_dir_.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(transcripts_dir_, ec);
    char name[64];
    std::snprintf(name, sizeof name, "/%04lld-", ctx.experiment);
    (void)write_file_atomic(transcripts_dir_ + name + ctx.tag + ".json", json_dump(transcript, 2) + "\n");
  }
  if (!reply) {
    std::lock_guard<std::mutex> l(mu_);
    if (client_.last_failure_is_fatal()) stop_reason_ = reply.error().message;
    else stop_reason_.reset();
    return reply.error();
  }
  if (!edit) return edit.error();
  Proposal p;
  p.source = edit->source;
  p.description = edit->description;
  p.tokens = reply->input_tokens + reply->output_tokens;
  p.cost_usd = client_.cost_of(*reply);
  p.predicted_us = edit->predicted_us;
  p.scratchpad = edit->scratchpad;
  p.show_variant = edit->show;
  p.keeps_notes = true;
  return std::optional<Proposal>(p);
}

}  // namespace ak
