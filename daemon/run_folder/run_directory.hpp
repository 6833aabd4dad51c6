#pragma once
/// The run folder and what lives in it:
///   kernels/<tag>.cu            the current best of each kernel (a git repository, branch autokernel/<name>)
///   experiments/NNNN-<tag>.cu   every candidate, kept or not, and its verdict (.verdict.json)
///   compiled/                   the bests' compiled modules, shared by the run's workers (a cache:
///                               removing it costs compiles, nothing else)
///   transcripts/NNNN-<tag>.json every exchange with the LLM (without the key)
///   notes/<tag>.json            the LLM's scratchpad for a kernel, and a structure it asked to see
///   results.tsv                 one row per experiment
///   state.json                  a summary for `status` and other readers, rewritten after each row
///   in_flight.json              the experiments started and not yet recorded (a restart re-runs them)
///   autokernel.log              the log
///   run.lock                    held by the daemon working on it
#include <string>

#include "common/result.hpp"

namespace ak {

class RunDirectory {
 public:
  explicit RunDirectory(std::string root) : root_(std::move(root)) {}
  RunDirectory(const RunDirectory&) = delete;
  RunDirectory& operator=(const RunDirectory&) = delete;
  ~RunDirectory();  ///< releases the lock

  /// Creates the folders, private to this user (0700, files 0600: it holds transcripts and the
  /// LLM's replies); an Error says what could not be created.
  Status create() const;
  /// Takes the run's lock for the life of this process; a second daemon gets an Error naming
  /// the holder's pid.
  Status lock();

  const std::string& root() const { return root_; }
  std::string kernel_file(const std::string& tag) const { return "kernels/" + tag + ".cu"; }  ///< relative
  std::string experiment_file(long long n, const std::string& tag) const;
  std::string results() const { return root_ + "/results.tsv"; }
  std::string state() const { return root_ + "/state.json"; }
  std::string in_flight() const { return root_ + "/in_flight.json"; }
  std::string log() const { return root_ + "/autokernel.log"; }
  std::string compiled() const { return root_ + "/compiled"; }
  std::string path(const std::string& relative) const { return root_ + "/" + relative; }

 private:
  std::string root_;
  int lock_fd_ = -1;
};

}  // namespace ak
