#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "daemon/run_folder/results_table.hpp"
#include "tests/support.hpp"

using namespace ak;

TEST_CASE("a row survives the trip through the table, tabs in descriptions made spaces", "[results]") {
  ResultRow r{7, "rmsnorm", "rmsnorm", 2451.1, 109.52, 0.8337, 1.7343, "PASS", 256, true, "abc1234", 1200, 3.83,
              "tier 1:\tAK_THREADS 256 -> 512\n"};
  auto back = parse_row(format_row(r));
  REQUIRE(back.ok());
  CHECK(back->experiment == 7);
  CHECK(back->latency_us == Approx(109.52));
  CHECK(back->kept);
  CHECK(back->commit == "abc1234");
  CHECK(back->description == "tier 1: AK_THREADS 256 -> 512 ");
}

TEST_CASE("the table starts with docs/design.md's header and the paired timing's columns", "[results]") {
  test::TempDir d;
  std::string path = (d.path / "results.tsv").string();
  REQUIRE(open_results(path).ok());
  CHECK(test::read_file(path) ==
        "experiment\ttag\tkernel_type\tthroughput\tlatency_us\tpct_peak\tspeedup_vs_baseline\tcorrectness\t"
        "peak_vram_mb\tkept\tcommit\tllm_tokens\tseconds\tdescription\tpaired_best_us\tpaired_ratio\tpaired_noise\tmove\tfailure\tpredicted_us\n");
}

TEST_CASE("a table of an older autokernel gains the paired columns and keeps its rows", "[results]") {
  test::TempDir d;
  std::string path = d.write("results.tsv",
                             "experiment\ttag\tkernel_type\tthroughput\tlatency_us\tpct_peak\tspeedup_vs_baseline\tcorrectness\t"
                             "peak_vram_mb\tkept\tcommit\tllm_tokens\tseconds\tdescription\n"
                             "1\trms\trmsnorm\t2400.00\t109.000\t0.8300\t1.0000\tPASS\t256.0\tyes\tabc\t0\t3.10\tbaseline\n");
  auto rows = open_results(path);
  REQUIRE(rows.ok());
  REQUIRE(rows->size() == 1);
  CHECK((*rows)[0].latency_us == 109.0);
  ResultRow r = (*rows)[0];
  r.experiment = 2;
  r.paired_best_us = 109.5;
  r.paired_ratio = 0.98;
  r.paired_noise = 0.002;
  REQUIRE(append_result(path, r).ok());
  auto again = read_results(path);
  REQUIRE(again.ok());
  REQUIRE(again->size() == 2);
  CHECK((*again)[0].paired_ratio == 0);
  CHECK((*again)[1].paired_best_us == Approx(109.5));
  CHECK((*again)[1].paired_ratio == Approx(0.98));
  CHECK((*again)[1].paired_noise == Approx(0.002));
  CHECK(test::read_file(path).rfind(results_header() + "\n", 0) == 0);
}

TEST_CASE("a row cut short by a crash is dropped and the file repaired", "[results]") {
  test::TempDir d;
  std::string path = (d.path / "results.tsv").string();
  REQUIRE(open_results(path).ok());
  ResultRow r{1, "softmax", "softmax", 2000, 121, 0.75, 1.8, "PASS", 256, true, "", 0, 4, "baseline: the starter"};
  REQUIRE(append_result(path, r).ok());
  std::ofstream(path, std::ios::app) << "2\tsoftmax\tsoft";
  auto rows = open_results(path);
  REQUIRE(rows.ok());
  CHECK(rows->size() == 1);
  CHECK(test::read_file(path).back() == '\n');
  r.experiment = 2;
  REQUIRE(append_result(path, r).ok());
  CHECK(open_results(path)->size() == 2);
}

TEST_CASE("a file that is not a results table is refused", "[results]") {
  test::TempDir d;
  std::string path = d.write("results.tsv", "name,score\nx,1\n");
  auto rows = open_results(path);
  REQUIRE_FALSE(rows.ok());
  CHECK_THAT(rows.error().message, Catch::Contains("not autokernel's results header"));
}

TEST_CASE("an older table's rows gain a move and a failure read once from their descriptions, and new rows carry them as fields", "[results]") {
  test::TempDir d;
  std::string path = d.write("results.tsv",
                             "experiment\ttag\tkernel_type\tthroughput\tlatency_us\tpct_peak\tspeedup_vs_baseline\tcorrectness\t"
                             "peak_vram_mb\tkept\tcommit\tllm_tokens\tseconds\tdescription\tpaired_best_us\tpaired_ratio\tpaired_noise\n"
                             "1\trms\trmsnorm\t2400.00\t109.000\t0.8300\t1.0000\tPASS\t256.0\tyes\tabc\t0\t3.10\tbaseline: the starter; speedups against the starter\t0\t0\t0\n"
                             "2\trms\trmsnorm\t0\t0\t0\t0\tFAIL\t0\tno\t\t0\t3.10\tstructure: starter -> row_in_registers -- shape sweep: wrong\t0\t0\t0\n");
  auto rows = open_results(path);
  REQUIRE(rows.ok());
  REQUIRE(rows->size() == 2);
  CHECK((*rows)[0].move == MoveKind::Baseline);
  CHECK((*rows)[1].move == MoveKind::Structure);
  CHECK((*rows)[1].description == "structure: starter -> row_in_registers");
  CHECK((*rows)[1].failure == "shape sweep: wrong");
  CHECK(test::read_file(path).rfind(results_header() + "\n", 0) == 0);   // upgraded in place
  // From now on the field decides: a description with the same words is an edit.
  ResultRow r = (*rows)[1];
  r.experiment = 3;
  r.move = MoveKind::Edit;
  r.description = "structure: an LLM's words -- not a failure";
  r.failure.clear();
  REQUIRE(append_result(path, r).ok());
  auto again = read_results(path);
  REQUIRE(again.ok());
  CHECK((*again)[1].move == MoveKind::Structure);
  CHECK((*again)[2].move == MoveKind::Edit);
  CHECK((*again)[2].description == "structure: an LLM's words -- not a failure");
  CHECK((*again)[2].failure.empty());
}

TEST_CASE("a row's predicted time is its own column, and rows of the 19-column table read with none", "[results][plan]") {
  ResultRow r;
  r.experiment = 4;
  r.tag = "softmax";
  r.correctness = "PASS";
  r.predicted_us = 98.5;
  auto back = parse_row(format_row(r));
  REQUIRE(back.ok());
  CHECK(back->predicted_us == Approx(98.5));
  const std::string old = "3\trms\trmsnorm\t1.00\t2.000\t0.1000\t1.0000\tPASS\t1.0\tno\t\t0\t1.00\tx\t0.000\t0.00000\t0.00000\tedit\t";
  auto older = parse_row(old);
  REQUIRE(older.ok());
  CHECK(older->predicted_us == 0);
  test::TempDir d;
  std::string path = d.write("results.tsv", results_header().substr(0, results_header().find("\tpredicted_us")) + "\n" + old + "\n");
  auto rows = open_results(path);
  REQUIRE(rows.ok());
  REQUIRE(rows->size() == 1);
  CHECK(test::read_file(path).rfind(results_header() + "\n", 0) == 0);   // upgraded in place
}
