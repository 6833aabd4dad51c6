#pragma once
/// What `autokernel run` checks of a config before it needs a GPU, shared with `config check`:
/// a config that passes here can still fail only for what the GPU, the driver or the network
/// says.
#include "common/result.hpp"
#include "config/config.hpp"

namespace ak {

/// Every problem found, one a line, each naming the config file, the line or key, and what to
/// do: a user type with no first file under the builtin proposer, a run folder that cannot be
/// made or written, a shape no GPU can hold (or whose sizes overflow), a shape the type's
/// contract excludes, two [[kernel]] entries of one kernel.
Status check_before_gpu(const Config& cfg);

}  // namespace ak
