#pragma once
/// The run's git history (libgit2): every kept variant is a commit of its kernel file on the
/// branch autokernel/<run-name>, with the metrics as trailers, so the history alone can tell
/// what each step gained and rebuild a results row lost in a crash.
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/result.hpp"

struct git_repository;

namespace ak {

struct CommitInfo {
  std::string id;        ///< short hash
  std::string message;
  std::map<std::string, std::string> trailers;   ///< "Autokernel-Experiment" -> "12"
};

/// "Key: value" lines of a message's last paragraph (after its last blank line).
std::map<std::string, std::string> parse_trailers(const std::string& message);

class GitHistory {
 public:
  /// Opens the repository in `dir`, or creates it with `branch` as its first branch. A
  /// repository checked out on another branch is an Error that says so.
  static Result<std::unique_ptr<GitHistory>> open(const std::string& dir, const std::string& branch);
  ~GitHistory();

  /// Commits the file at `relpath` (relative to the repository) as it is on disk now.
  Result<std::string> commit_file(const std::string& relpath, const std::string& message);
  /// The last commit on the branch, if any.
  Result<std::optional<CommitInfo>> head();
  /// Commits from newest to oldest, at most `limit`.
  Result<std::vector<CommitInfo>> log(size_t limit = 1000);
  /// The file's content in the last commit; nullopt when it was never committed.
  Result<std::optional<std::string>> file_at_head(const std::string& relpath);
  /// Pushes the checked-out branch to the same branch of `remote` (a URL or a path, as git takes
  /// it), fast-forward only: several daemons share a remote, each on its own branch.
  Status push(const std::string& remote);

 private:
  GitHistory() = default;
  git_repository* repo_ = nullptr;
};

}  // namespace ak
