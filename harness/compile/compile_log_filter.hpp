#pragma once
/// A compile log made fit to leave the machine: it goes into verdicts, the run folder, the
/// transcripts and the next prompt, sent over HTTP. NVRTC quotes the source line of each
/// diagnostic, so a diagnostic located in any file but the candidate or a CUDA header could carry
/// that file's content: such diagnostics are dropped, with their quoted lines, and counted. The
/// sandbox already keeps the compiler from reading such files; this is the line behind it.
#include <string>

namespace ak {

/// `log` without the diagnostics located outside `candidate` (the program's name) and the
/// folder `cuda_include`, ending with "(N lines quoting other files removed)" when any were.
std::string keep_candidate_text(const std::string& log, const std::string& candidate, const std::string& cuda_include);

}  // namespace ak
