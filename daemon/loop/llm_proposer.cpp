#include "daemon/loop/llm_proposer.hpp"

#include "common/format.hpp"
#include "common/text_escape.hpp"
#include "common/untrusted_text.hpp"

#include <cstdio>
#include <filesystem>

#include "daemon/loop/run_directory.hpp"
#include "kernels_cuda/registry.hpp"
#include "kernels_cuda/variants.hpp"
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

std::string history_text(const ProposalContext& ctx) {
  if (ctx.history.empty() && ctx.in_flight.empty()) return "(none yet)";
  std::string h;
  size_t first = ctx.history.size() > 12 ? ctx.history.size() - 12 : 0;  // the last dozen
  for (size_t i = first; i < ctx.history.size(); ++i) {
    const PastExperiment& e = ctx.history[i];
    h += "- " + untrusted_line(e.description, kDescriptionBytes) + ": " + e.correctness;
    if (e.correctness == "PASS") h += format_numbers(", %.2f us", e.latency_us);
    h += e.kept ? ", kept" : ", reverted";
    if (!e.failure.empty()) h += ": " + untrusted_text(e.failure, kMessageBytes + kCompileLogBytes);
    h += "\n";
  }
  // Proposals judged on other GPUs right now: the model should not propose them again.
  for (auto& e : ctx.in_flight)
    h += "- " + (e.description.empty() ? std::string("(a proposal still being written)") : untrusted_line(e.description, kDescriptionBytes)) +
         ": being judged now on another GPU; propose something different\n";
  return h;
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
  const std::string* notes = prompt_text("notes/kind-" + u.kind + ".txt");
  if (!message || !best || !first || !notes) return error("the prompts of user types are missing from this build of autokernel");
  auto current = ctx.first_file ? render("user-type-first.txt", *first, values) : render("user-type-best.txt", *best, values);
  if (!current) return current.error();
  std::map<std::string, std::string> all = values;
  std::string dtypes;
  for (DType d : u.dtypes) dtypes += (dtypes.empty() ? "" : ", ") + std::string(dtype_name(d));
  all["kind"] = u.kind;
  all["dtypes"] = dtypes;
  all["reference_source"] = u.reference_source;
  all["tensors"] = tensors_text(u, ctx.shape);
  all["grid_rule"] = ctx.spec->launch_help;
  all["type_notes"] = *notes;
  all["current_file"] = *current;
  return render("user-type.txt", *message, all);
}

}  // namespace

Result<ChatRequest> build_chat_request(const ProposalContext& ctx, int max_output_tokens) {
  const KernelSpec& spec = *ctx.spec;
  const std::string* contract = prompt_text("kernel-contract.txt");
  const std::string* system = prompt_text("system.txt");
  const std::string* experiment = prompt_text("experiment.txt");
  if (!contract || !system || !experiment) return error("the prompts are missing from this build of autokernel");
  const std::string* notes = prompt_text("notes/" + spec.type + ".txt");
  auto rendered_contract = render("kernel-contract.txt", *contract,
                                  {{"entry_signature", spec.abi()}, {"tolerances", tolerances(spec)},
                                   {"dtypes", instantiations(spec)}, {"launch_geometry", spec.launch_help}});
  if (!rendered_contract) return rendered_contract.error();
  auto sys = render("system.txt", *system,
                    {{"kernel_contract", *rendered_contract}, {"keep_threshold_pct", format_numbers("%g", ctx.keep_threshold * 100)}});
  if (!sys) return sys.error();
  const double floor_us = ctx.pct_peak > 0 ? ctx.best_us * ctx.pct_peak : 0;
  const std::string unit = ctx.throughput_unit.empty() ? "GB/s" : ctx.throughput_unit;
  const std::map<std::string, std::string> values{{"gpu", ctx.gpu.empty() ? "the GPU (not yet queried in this run)" : ctx.gpu},
                      {"arch", ctx.arch.empty() ? "?" : ctx.arch},
                      {"peak", ctx.peak > 0 ? format_numbers("%.0f ", ctx.peak) + unit : "not yet measured"},
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
                      {"type_notes", notes ? *notes : "(none)"},
                      {"structure", variant_name(ctx.best_source)},
                      {"structures", structures_text(spec.type)},
                      {"history", history_text(ctx)},
                      {"best_file", ctx.best_source}};
  const UserTypeSpec* user_type = find_user_type(spec.type);
  auto user = user_type ? user_type_message(ctx, *user_type, values) : render("experiment.txt", *experiment, values);
  if (!user) return user.error();
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
  return std::optional<Proposal>(p);
}

}  // namespace ak
