#include "harness/judging/verdict.hpp"

#include <cmath>

namespace ak {

namespace {
// JSON has no NaN or infinity, and a wrong element is often exactly that: keep them as text.
nlohmann::json number(double x) {
  if (std::isnan(x)) return "nan";
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  return x;
}
double number_from(const nlohmann::json& j, const char* key) {
  if (!j.contains(key) || j[key].is_null()) return 0;
  const auto& v = j[key];
  if (v.is_number()) return v.get<double>();
  std::string s = v.is_string() ? v.get<std::string>() : "nan";
  return s == "inf" ? INFINITY : s == "-inf" ? -INFINITY : NAN;
}
constexpr std::pair<Correctness, const char*> kNames[] = {
    {Correctness::Pass, "PASS"},       {Correctness::Fail, "FAIL"},
    {Correctness::CompileError, "COMPILE_ERROR"}, {Correctness::Timeout, "TIMEOUT"},
    {Correctness::Crash, "CRASH"},     {Correctness::Suspect, "SUSPECT"}};
}

const char* correctness_name(Correctness c) {
  for (auto& [k, n] : kNames)
    if (k == c) return n;
  return "FAIL";
}

std::optional<Correctness> parse_correctness(const std::string& s) {
  for (auto& [k, n] : kNames)
    if (s == n) return k;
  return std::nullopt;
}

void to_json(nlohmann::json& j, const Verdict& v) {
  j = nlohmann::json{{"correctness", correctness_name(v.correctness)},
                     {"message", v.message},
                     {"kernel_type", v.kernel_type},
                     {"dtype", v.dtype},
                     {"shape", v.shape},
                     {"arch", v.arch},
                     {"gpu", v.gpu},
                     {"seed", v.seed},
                     {"fixed_seed", v.fixed_seed},
                     {"failed_stage", v.failed_stage},
                     {"failed_shape", v.failed_shape},
                     {"failed_dtype", v.failed_dtype},
                     {"failed_input", v.failed_input},
                     {"worst_index", v.worst_index},
                     {"worst_got", number(v.worst_got)},
                     {"worst_expected", number(v.worst_expected)},
                     {"compile_log", v.compile_log},
                     {"registers", v.registers},
                     {"spill_bytes", v.spill_bytes},
                     {"static_smem_bytes", v.static_smem_bytes},
                     {"block_threads", v.block_threads},
                     {"rows_per_block", v.rows_per_block},
                     {"total_seconds", v.total_seconds},
                     {"throughput", v.throughput},
                     {"throughput_unit", v.throughput_unit},
                     {"pct_peak", v.pct_peak},
                     {"peak_used", v.peak_used},
                     {"baseline_us", v.baseline_us},
                     {"baseline_source", v.baseline_source},
                     {"reference_us", v.reference_us},
                     {"starter_us", v.starter_us},
                     {"cublas_us", v.cublas_us},
                     {"speedup", v.speedup},
                     {"torch_compile_us", v.torch_compile_us},
                     {"peak_vram_mb", v.peak_vram_mb},
                     {"context_lost", v.context_lost},
                     {"harness_error", v.harness_error},
                     {"notes", v.notes}};
  if (v.kernelbench_pass) j["kernelbench_pass"] = *v.kernelbench_pass;
  if (v.paired.pairs > 0)
    j["paired"] = {{"pairs", v.paired.pairs}, {"best_us", v.paired.best_us}, {"ratio", v.paired.ratio},
                   {"noise", v.paired.noise}, {"best_spread", v.paired.best_spread},
                   {"best_failure", v.paired.best_failure}};
  if (v.counters) j["counters"] = *v.counters;
  auto& stages = j["stages"] = nlohmann::json::array();
  for (auto& s : v.stages)
    stages.push_back({{"name", s.name}, {"passed", s.passed}, {"seconds", s.seconds}, {"detail", s.detail}});
  if (v.timing) {
    const Timing& t = *v.timing;
    j["timing"] = {{"samples", t.samples},   {"median_us", t.median_us}, {"min_us", t.min_us},
                   {"max_us", t.max_us},     {"p10_us", t.p10_us},       {"p90_us", t.p90_us},
                   {"event_median_us", t.event_median_us}, {"spread", t.spread()}, {"source", t.source}};
  }
}

void from_json(const nlohmann::json& j, Verdict& v) {
  v = Verdict{};
  v.correctness = parse_correctness(j.value("correctness", "FAIL")).value_or(Correctness::Fail);
#define AK_GET(field) v.field = j.value(#field, v.field)
  AK_GET(message); AK_GET(kernel_type); AK_GET(dtype); AK_GET(shape); AK_GET(arch); AK_GET(gpu);
  AK_GET(seed); AK_GET(fixed_seed); AK_GET(failed_stage); AK_GET(failed_shape); AK_GET(failed_dtype); AK_GET(failed_input);
  AK_GET(worst_index); AK_GET(compile_log);
  v.worst_got = number_from(j, "worst_got");
  v.worst_expected = number_from(j, "worst_expected");
  AK_GET(registers); AK_GET(spill_bytes); AK_GET(static_smem_bytes); AK_GET(block_threads);
  AK_GET(rows_per_block); AK_GET(total_seconds); AK_GET(throughput); AK_GET(throughput_unit);
  AK_GET(pct_peak); AK_GET(peak_used); AK_GET(baseline_us); AK_GET(baseline_source);
  AK_GET(reference_us); AK_GET(starter_us); AK_GET(cublas_us); AK_GET(speedup); AK_GET(peak_vram_mb); AK_GET(context_lost);
  AK_GET(torch_compile_us); AK_GET(harness_error);
#undef AK_GET
  if (j.contains("kernelbench_pass")) v.kernelbench_pass = j["kernelbench_pass"].get<bool>();
  if (j.contains("paired")) {
    const auto& p = j["paired"];
    v.paired = PairedTiming{p.value("pairs", 0),         p.value("best_us", 0.0),     p.value("ratio", 0.0),
                            p.value("noise", 0.0),       p.value("best_spread", 0.0), p.value("best_failure", "")};
  }
  if (j.contains("counters") && j["counters"].is_object()) v.counters = j["counters"].get<HardwareCounters>();
  if (j.contains("notes")) v.notes = j["notes"].get<std::vector<std::string>>();
  if (j.contains("stages"))
    for (auto& s : j["stages"])
      v.stages.push_back({s.value("name", ""), s.value("passed", false), s.value("seconds", 0.0),
                          s.value("detail", "")});
  if (j.contains("timing")) {
    const auto& t = j["timing"];
    v.timing = Timing{t.value("samples", 0),       t.value("median_us", 0.0), t.value("min_us", 0.0),
                      t.value("max_us", 0.0),      t.value("p10_us", 0.0),    t.value("p90_us", 0.0),
                      t.value("event_median_us", 0.0), t.value("source", std::string("CUPTI"))};
  }
}

}  // namespace ak
