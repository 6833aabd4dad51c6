#pragma once
/// What the model carries from one prompt of a kernel to the next, kept in the run folder
/// (notes/<tag>.json) so that a restart keeps it: its scratchpad (what to avoid, what to try),
/// which it rewrites with each proposal, and the library structure it asked to see.
#include <string>

#include "common/result.hpp"

namespace ak {

struct ModelNotes {
  std::string scratchpad;
  std::string show_variant;
};

/// notes/<tag>.json under the run folder `root`.
std::string model_notes_path(const std::string& root, const std::string& tag);

/// The notes of a kernel; empty ones when the file does not exist. A damaged file is an Error
/// naming it (delete it to start the notes afresh).
Result<ModelNotes> read_model_notes(const std::string& root, const std::string& tag);

/// Writes them whole (atomically), creating notes/ (0700) when needed.
Status write_model_notes(const std::string& root, const std::string& tag, const ModelNotes& notes);

}  // namespace ak
