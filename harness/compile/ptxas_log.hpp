#pragma once
/// ptxas's part of NVRTC's log: its statistics (registers, spills, stack, shared memory) read into
/// the entry points and dropped, its errors and warnings kept for the compile log, each with the
/// PTX line it names and the line of the kernel file that line came from. A typo in inline PTX
/// (a TMA, mbarrier or wgmma instruction) is then a log a reader can act on.
#include <string>
#include <vector>

#include "harness/compile/nvrtc_compile.hpp"

namespace ak {

/// Splits NVRTC's log: the statistics lines ("ptxas info : ...", "ptxas . N bytes stack frame")
/// are parsed into `functions` (matched by lowered name) and removed; every other line, ptxas's
/// errors, warnings and fatal lines included, is returned in order.
std::string split_ptxas_log(const std::string& log, std::vector<FunctionInfo>& functions);

/// After each ptxas line that names a PTX line ("ptxas application ptx input, line 28; error : ..."),
/// a line quoting that PTX line from `ptx` and, where a `.loc` before it names `filename`, the line
/// of the kernel file it was compiled from: "    at kernel.cu line 4, PTX line 28: mov.u32 %r2, %bogus;".
std::string annotate_ptxas_lines(const std::string& diagnostics, const std::string& ptx, const std::string& filename);

/// A non-negative decimal integer that fits an int; false (and `out` unchanged) otherwise.
bool parse_count(const std::string& text, int& out);

}  // namespace ak
