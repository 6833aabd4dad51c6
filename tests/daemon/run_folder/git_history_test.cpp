#include <catch2/catch.hpp>

#include <fstream>

#include "daemon/run_folder/git_history.hpp"
#include "tests/support.hpp"

using namespace ak;

TEST_CASE("commits land on the run's branch with their trailers, in a real repository", "[git]") {
  test::TempDir d;
  auto git = GitHistory::open(d.path.string(), "autokernel/night");
  REQUIRE(git.ok());
  CHECK_FALSE((*git)->head()->has_value());
  std::filesystem::create_directories(d.path / "kernels");
  std::ofstream(d.path / "kernels/rmsnorm.cu") << "v1\n";
  auto c1 = (*git)->commit_file("kernels/rmsnorm.cu", "experiment 1: rmsnorm: first\n\nAutokernel-Experiment: 1\n");
  REQUIRE(c1.ok());
  std::ofstream(d.path / "kernels/rmsnorm.cu") << "v2\n";
  auto c2 = (*git)->commit_file("kernels/rmsnorm.cu", "experiment 2: rmsnorm: second\n\nAutokernel-Experiment: 2\n");
  REQUIRE(c2.ok());
  auto log = (*git)->log();
  REQUIRE(log->size() == 2);
  CHECK(log->front().id == *c2);
  CHECK(log->front().trailers.at("Autokernel-Experiment") == "2");
  CHECK(**(*git)->file_at_head("kernels/rmsnorm.cu") == "v2\n");
  CHECK_FALSE((*git)->file_at_head("kernels/softmax.cu")->has_value());
  CHECK(test::read_file((d.path / ".git/HEAD").string()) == "ref: refs/heads/autokernel/night\n");
}

TEST_CASE("a repository on another branch is refused with the reason", "[git]") {
  test::TempDir d;
  REQUIRE(GitHistory::open(d.path.string(), "autokernel/a").ok());
  auto other = GitHistory::open(d.path.string(), "autokernel/b");
  REQUIRE_FALSE(other.ok());
  CHECK_THAT(other.error().message, Catch::Contains("refs/heads/autokernel/a"));
}

namespace {

/// The subjects on a branch of a bare repository, by the git command line (an independent reader).
std::string remote_branch(const std::filesystem::path& bare, const std::string& branch) {
  return test::run_shell("git --git-dir=" + bare.string() + " log --format=%s " + branch).out;
}

}  // namespace

TEST_CASE("the run's branch is pushed to a bare repository, and again after more commits", "[git]") {
  test::TempDir d;
  const auto bare = d.path / "shared.git";
  REQUIRE(std::system(("git init -q --bare " + bare.string()).c_str()) == 0);
  auto git = GitHistory::open((d.path / "run").string(), "autokernel/box1");
  REQUIRE(git.ok());
  CHECK((*git)->push(bare.string()).ok());   // nothing committed yet: nothing to push
  std::filesystem::create_directories(d.path / "run/kernels");
  std::ofstream(d.path / "run/kernels/softmax.cu") << "v1\n";
  REQUIRE((*git)->commit_file("kernels/softmax.cu", "experiment 1: softmax: first").ok());
  REQUIRE((*git)->push(bare.string()).ok());
  CHECK(remote_branch(bare, "autokernel/box1") == "experiment 1: softmax: first\n");
  std::ofstream(d.path / "run/kernels/softmax.cu") << "v2\n";
  REQUIRE((*git)->commit_file("kernels/softmax.cu", "experiment 4: softmax: faster").ok());
  REQUIRE((*git)->push(bare.string()).ok());
  CHECK(remote_branch(bare, "autokernel/box1") == "experiment 4: softmax: faster\nexperiment 1: softmax: first\n");
}

TEST_CASE("a remote that cannot be reached is an error naming it", "[git]") {
  test::TempDir d;
  auto git = GitHistory::open(d.path.string(), "autokernel/box2");
  REQUIRE(git.ok());
  std::ofstream(d.path / "f.cu") << "v1\n";
  REQUIRE((*git)->commit_file("f.cu", "experiment 1: f: first").ok());
  auto s = (*git)->push((d.path / "no-such-remote.git").string());
  REQUIRE_FALSE(s.ok());
  CHECK_THAT(s.error().message, Catch::Contains("no-such-remote.git"));
}
