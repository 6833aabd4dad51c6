#include "daemon/loop/gpu_time.hpp"

#include <catch2/catch.hpp>

namespace ak {

TEST_CASE("a GPU's stretches add up to its time, each under the state it was in", "[loop][gpu-time]") {
  GpuTime t(2, 100);
  t.set(0, GpuState::Starter, 101);     // 1 s to its first experiment
  t.set(0, GpuState::Loop, 111);        // judged its starter for 10 s
  t.set(0, GpuState::Candidate, 111.5);
  t.set(0, GpuState::NoOpenKernel, 120);
  auto j = t.to_json(0, 130);
  CHECK(j.at("start").get<double>() == Approx(1));
  CHECK(j.at("starter").get<double>() == Approx(10));
  CHECK(j.at("loop_thread").get<double>() == Approx(0.5));
  CHECK(j.at("candidate").get<double>() == Approx(8.5));
  CHECK(j.at("no_open_kernel").get<double>() == Approx(10));   // the open stretch, up to now
  double sum = 0;
  for (auto& [k, v] : j.items()) sum += v.get<double>();
  CHECK(sum == Approx(30));
  // The other GPU never started: all of its time is the start.
  CHECK(t.to_json(1, 130).at("start").get<double>() == Approx(30));
}

TEST_CASE("a finish time read on a worker thread before the current stretch began counts from that start", "[loop][gpu-time]") {
  GpuTime t(1, 0);
  t.set(0, GpuState::Candidate, 5);
  t.set(0, GpuState::Loop, 4);   // read before the loop's own reading at 5
  auto j = t.to_json(0, 6);
  CHECK(j.at("start").get<double>() == Approx(5));
  CHECK_FALSE(j.contains("candidate"));
  CHECK(j.at("loop_thread").get<double>() == Approx(1));
}

TEST_CASE("the summary gives the share of GPU time spent judging and every idle cause", "[loop][gpu-time]") {
  GpuTime t(2, 0);
  t.set(0, GpuState::Candidate, 0);
  t.set(1, GpuState::JudgedAgain, 0);
  t.set(1, GpuState::Ending, 5);
  const std::string s = t.summary(10);
  CHECK(s.find("judged 75.0% of their 20.0 s") != std::string::npos);
  CHECK(s.find("ending 5.0 s") != std::string::npos);
  CHECK(s.find("start") == std::string::npos);
}

}  // namespace ak
