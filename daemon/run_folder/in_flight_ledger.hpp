#pragma once
/// The experiments started and not yet recorded. With several GPUs, rows arrive out of order and
/// a kill can come between any two of them; the ledger is written (atomically) when an
/// experiment gets its number and again when its row is written, so a restart knows which
/// numbers were handed out, which candidates to run again, and never hands a number out twice.
#include <string>
#include <vector>

#include "common/result.hpp"

namespace ak {

struct InFlight {
  long long experiment = 0;
  std::string tag;
  int device = 0;                 ///< the GPU it runs on
  std::string description;        ///< the proposal's line; empty while an LLM is still answering
  long long tokens = 0;
  double cost_usd = 0;
  double started_s = 0;           ///< on the loop's clock
  bool structure_move = false;    ///< a switch to another structure (MoveKind::Structure)
  double predicted_us = 0;        ///< the proposer's prediction, for the row
};

class InFlightLedger {
 public:
  explicit InFlightLedger(std::string path) : path_(std::move(path)) {}

  /// What the file holds (nothing when it does not exist); an Error for a file that cannot be read.
  Status load();
  Status add(const InFlight& e);
  Status update(const InFlight& e);   ///< by experiment number
  Status remove(long long experiment);

  const std::vector<InFlight>& entries() const { return entries_; }
  long long highest() const;          ///< the largest number handed out, 0 if none

 private:
  Status save() const;
  std::string path_;
  std::vector<InFlight> entries_;
};

}  // namespace ak
