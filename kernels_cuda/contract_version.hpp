#pragma once
/// Which version of its type's contract a kernel file was written for. A file declares it as
///     extern "C" __constant__ int ak_contract_version = 2;
/// and a file that declares none is of version 1, the version every type began with. The version
/// picks the spec a file is judged against (its arguments, shapes and references); the entry
/// point's parameters are then checked against that spec at load, so a file that names a version
/// it does not follow fails there.
#include <string>

#include "common/result.hpp"

namespace ak {

inline constexpr const char* kContractVersionSymbol = "ak_contract_version";

/// The version `source` declares: 1 when it declares none; an error when the declaration is not
/// one plain line with an integer literal (a version must be readable without compiling).
Result<int> declared_contract_version(const std::string& source);

}  // namespace ak
