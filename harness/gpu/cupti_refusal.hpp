#pragma once
/// Why CUPTI would not read the counters, in the words a verdict carries: what was being done,
/// CUPTI's own name for the result, and for the refusals a person can change (a driver that keeps
/// counters to administrators, a missing metric library, another profiler attached, a GPU mode
/// that forbids profiling) what to change. Kept apart from the calls into CUPTI so that every
/// wording is checked without a GPU.
#include <cupti.h>

#include <string>

namespace ak {

/// Who the process runs as, which decides the advice on a privileges refusal: a user to make an
/// administrator or a driver option to change, or root without the capability the driver asks.
struct ProcessIdentity {
  long uid = 0;   ///< the effective user id
  bool root() const { return uid == 0; }
  static ProcessIdentity current();
};

/// "<what> failed: <result_name> (<why, and what to do>)"; the parenthesis is left out for a
/// result no person can act on. `result_name` is cuptiGetResultString's answer (empty or null:
/// CUPTI gave none, and the number is shown).
std::string cupti_failure_reason(CUptiResult result, const char* result_name, const std::string& what,
                                 const ProcessIdentity& who);

}  // namespace ak
