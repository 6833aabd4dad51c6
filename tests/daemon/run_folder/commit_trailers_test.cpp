// A kept experiment's commit message: its metrics as trailers, and the row they give back.
#include <catch2/catch.hpp>

#include "daemon/run_folder/commit_trailers.hpp"
#include "daemon/run_folder/git_history.hpp"

using namespace ak;

TEST_CASE("a kept experiment's commit message carries its metrics and gives the row back", "[git]") {
  ResultRow r{12, "softmax", "softmax", 2285.5, 117.47, 0.777, 1.92, "PASS", 256, true, "", 0, 3.75,
              "tier 2: AK_VEC 1 -> 8"};
  std::string m = commit_message(r, 121.01, "GB/s");
  CHECK_THAT(m, Catch::StartsWith("experiment 12: softmax: tier 2: AK_VEC 1 -> 8\n\n117.47 us, 2285.5 GB/s, 77.7% of peak: -2.9% time"));
  CommitInfo c{"deadbee", m, parse_trailers(m)};
  auto back = row_from_commit(c);
  REQUIRE(back.ok());
  CHECK(back->experiment == 12);
  CHECK(back->latency_us == Approx(117.47));
  CHECK(back->description == "tier 2: AK_VEC 1 -> 8");
  CHECK(back->commit == "deadbee");
}

TEST_CASE("a commit whose trailers lack a metric gives no row, and says which trailer is missing", "[git]") {
  ResultRow r{3, "softmax", "softmax", 100, 50, 0.5, 1.5, "PASS", 0, true, "", 0, 1, "an edit"};
  std::string m = commit_message(r, 0, "GB/s");
  const std::string line = "Autokernel-Latency-Us: 50.000\n";
  REQUIRE(m.find(line) != std::string::npos);
  m.erase(m.find(line), line.size());
  auto back = row_from_commit({"cafe123", m, parse_trailers(m)});
  REQUIRE_FALSE(back.ok());
  CHECK_THAT(back.error().message, Catch::Contains("cafe123") && Catch::Contains("Autokernel-Latency-Us"));
}

TEST_CASE("a structure move and a failed correctness survive the commit, and a commit without a move is an edit", "[git]") {
  ResultRow r{5, "rmsnorm", "rmsnorm", 10, 20, 0.1, 1.1, "DEMOTED", 0, true, "", 0, 2, "structure: two_pass"};
  r.move = MoveKind::Structure;
  std::string m = commit_message(r, 25, "GB/s");
  auto back = row_from_commit({"abc", m, parse_trailers(m)});
  REQUIRE(back.ok());
  CHECK(back->move == MoveKind::Structure);
  CHECK(back->correctness == "DEMOTED");
  const std::string move = "Autokernel-Move: structure\n";
  m.erase(m.find(move), move.size());
  CHECK(row_from_commit({"abc", m, parse_trailers(m)})->move == MoveKind::Edit);
}
