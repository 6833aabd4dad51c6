// The whole-step prediction: the GPU's busy time after the kernels' speedups, the CPU's issue time
// after the replaced functions' Python and launches go, the step the slower of the two.
#include <catch2/catch.hpp>

#include "daemon/profile/step_prediction.hpp"

using namespace ak;

namespace {
std::vector<PredictedPart> gpu_parts(double f, double s) { return {PredictedPart{"rmsnorm", "4096x2048", f, s, 1}}; }
CpuPart cpu_part(double original_us, double op_us) {
  CpuPart c;
  c.name = "m.Qwen3RMSNorm.forward";
  c.type = "rmsnorm";
  c.calls_per_step = 34;
  c.original_us_per_step = original_us;
  c.op_us_per_step = op_us;
  c.launches_per_call = 6;
  return c;
}
}  // namespace

TEST_CASE("a CPU-bound step gains what the ops remove from the CPU, beyond the kernel-time Amdahl", "[verify][prediction]") {
  // Eager: the CPU issues the step in 13.1 ms, its kernels take 9.7 ms, the step 13.56 ms.
  const StepTimes before{9700, 13100, 13560};
  const auto p = predict_step(gpu_parts(0.3, 3), before, {cpu_part(6000, 1100)});
  REQUIRE(p.whole_step);
  CHECK(p.kernel_time_speedup == Approx(1 / (0.7 + 0.1)));
  CHECK(p.after.gpu_busy_us == Approx(9700 * 0.8));
  CHECK(p.cpu_removed_us == Approx(4900));
  CHECK(p.after.cpu_issue_us == Approx(8200));
  CHECK(p.not_overlapped_us == Approx(460));
  CHECK(p.after.step_us == Approx(8200 + 460));
  CHECK(p.speedup == Approx(13560 / 8660.0));
  CHECK(p.speedup > p.kernel_time_speedup);
  CHECK(bound_by(p.before) == "CPU");
  CHECK(bound_by(p.after) == "CPU");
  const std::string text = step_prediction_text(p);
  CHECK_THAT(text, Catch::Contains("the Amdahl plan predicted 1.250x from rmsnorm@4096x2048 f=0.300 s=3.00x"));
  CHECK_THAT(text, Catch::Contains("predicted 1.566x"));
  CHECK_THAT(text, Catch::Contains("without the ops, measured CPU-bound"));
  CHECK_THAT(text, Catch::Contains("with the ops, predicted CPU-bound: the CPU issues it in 8200 µs"));
  CHECK_THAT(text, Catch::Contains("m.Qwen3RMSNorm.forward: 34.0 calls a step, CPU 6000.0 -> 1100.0 µs a step (the original launched 6.0 kernels a call)"));
  CHECK_THAT(text, Catch::Contains("rmsnorm@4096x2048: GPU 2910 -> 970 µs a step"));
  const auto j = step_prediction_json(p);
  CHECK(j["gpu_parts"][0]["removed_us"].get<double>() == Approx(1940));
  CHECK(j["speedup"].get<double>() == Approx(p.speedup));
  CHECK(j["kernel_time_speedup"].get<double>() == Approx(1.25));
  CHECK(j["after"]["bound"] == "CPU");
  CHECK(j["cpu_parts"][0]["removed_us"].get<double>() == Approx(4900));
}

TEST_CASE("a GPU-bound step stays near the kernel-time Amdahl: the CPU it frees was not waited for", "[verify][prediction]") {
  const StepTimes before{10000, 4000, 10200};
  const auto p = predict_step(gpu_parts(0.5, 2), before, {cpu_part(1500, 500)});
  REQUIRE(p.whole_step);
  CHECK(p.after.gpu_busy_us == Approx(7500));
  CHECK(p.after.cpu_issue_us == Approx(3000));
  CHECK(bound_by(p.after) == "GPU");
  CHECK(p.speedup == Approx(10200 / 7700.0));
  CHECK(p.speedup == Approx(p.kernel_time_speedup).epsilon(0.01));
}

TEST_CASE("a step the kernels' speedups make CPU-bound gains less than the kernel-time Amdahl says", "[verify][prediction]") {
  const StepTimes before{10000, 8000, 10000};
  const auto p = predict_step(gpu_parts(0.6, 4), before, {cpu_part(2000, 1000)});
  CHECK(bound_by(p.before) == "GPU");
  CHECK(p.after.gpu_busy_us == Approx(5500));
  CHECK(p.after.cpu_issue_us == Approx(7000));
  CHECK(bound_by(p.after) == "CPU");
  CHECK(p.speedup == Approx(10000 / 7000.0));
  CHECK(p.speedup < p.kernel_time_speedup);
}

TEST_CASE("a replacement slower on the CPU than its original adds to the CPU's time", "[verify][prediction]") {
  const auto p = predict_step({}, StepTimes{5000, 9000, 9000}, {cpu_part(1000, 1400)});
  CHECK(p.cpu_removed_us == Approx(-400));
  CHECK(p.speedup == Approx(9000 / 9400.0));
}

TEST_CASE("without a measured step the prediction counts kernel time only and says why", "[verify][prediction]") {
  const auto p = predict_step(gpu_parts(0.2, 4), StepTimes{}, {cpu_part(6000, 1100)});
  CHECK_FALSE(p.whole_step);
  CHECK(p.speedup == Approx(1 / (0.8 + 0.05)));
  CHECK_THAT(step_prediction_text(p), Catch::Contains("counts kernel time only (the run measured no GPU busy time"));
  const auto j = step_prediction_json(p);
  CHECK(j["whole_step"] == false);
  CHECK_FALSE(j.contains("before"));
  CHECK(predicted_speedup({}) == 1.0);
}
