#include "kernels_cuda/contract_version.hpp"

#include <regex>

namespace ak {

Result<int> declared_contract_version(const std::string& source) {
  if (source.find(kContractVersionSymbol) == std::string::npos) return 1;
  static const std::regex decl(R"((^|\n)[ \t]*extern[ \t]+"C"[ \t]+__constant__[ \t]+(const[ \t]+)?int[ \t]+ak_contract_version[ \t]*=[ \t]*([0-9]{1,4})[ \t]*;)");
  std::smatch m;
  if (!std::regex_search(source, m, decl))
    return error(std::string("the file names ") + kContractVersionSymbol + " but does not declare it as one line `extern \"C\" __constant__ int " +
                 kContractVersionSymbol + " = N;` with N an integer: write the version the file follows that way");
  const std::string rest = m.suffix();
  if (std::regex_search(rest, decl))
    return error(std::string("the file declares ") + kContractVersionSymbol + " twice: keep one declaration");
  const int version = std::stoi(m[3]);
  if (version < 1) return error(std::string(kContractVersionSymbol) + " is " + m[3].str() + ": versions begin at 1");
  return version;
}

}  // namespace ak
