#pragma once
/// `autokernel plan --user-types DIR`: a hot module of none of autokernel's types offered as a user
/// type (docs/user-types.md, "From a profile"). For each such module among the plan's rows, a
/// KernelBench-convention reference that builds the program's own class, and a spec beside it.
/// Only what the profile vouches for is offered: a leaf module called on one tensor that a
/// no-argument constructor builds as the program ran it, or a torch.nn layer (weights and all) that
/// the arguments its instance keeps rebuild; every other module is named with the reason.
#include <string>
#include <vector>

#include "common/result.hpp"
#include "daemon/profile/amdahl_plan.hpp"
#include "daemon/profile/module_attribution.hpp"

namespace ak {

struct UserTypeOffer {
  ProfiledKernel kernel;   ///< the module's candidate in the profile
  double f = 0;            ///< its share of the GPU time
  ModuleRange range;       ///< its hook range, read back
  std::string name;        ///< the user type's name (the class in snake case, unique in the plan)
  std::string refusal;     ///< why it is not offered; empty when it is
};

/// The plan's "other" module candidates, each offered (with a name) or refused (with the reason).
std::vector<UserTypeOffer> user_type_offers(const Plan& plan);

/// "NewGELUActivation" -> "new_gelu_activation": a user type's name ([a-z][a-z0-9_]{0,47}).
std::string snake_case_type_name(const std::string& class_name);

/// The reference: `class Model(nn.Module)` building the program's class by its import path, the
/// recorded input shape as size globals, get_inputs() and get_init_inputs().
std::string offer_reference_source(const UserTypeOffer& offer);
/// The spec: elementwise (grid elements), or row-wise over the last dimension (grid rows) where a
/// kernel of the module reduces, with an output shaped like the input, which the summary says is
/// assumed (the profile records no outputs).
std::string offer_spec_text(const UserTypeOffer& offer, const std::string& profile_name);

/// Writes DIR/<name>.py and DIR/<name>.toml for each offered module, each spec checked by
/// parse_user_type first. A file that exists with other text (a user's edit) is kept, and named in
/// `kept`. A torch.nn layer rebuilt from its arguments (init=args: a convolution, a norm with
/// weights) gets its spec from its reference as `autokernel kernelbench` reads a problem, run with
/// `python` (which needs torch); where that reading refuses it, the offer is refused with the reason.
Status write_user_type_offers(std::vector<UserTypeOffer>& offers, const std::string& dir, const std::string& profile_name,
                              const std::string& python, std::vector<std::string>& kept);

/// The [[kernel]] entries, `spec = "<spec_dir>/<name>.toml"`, with weight and baseline_us as the
/// plan's other entries; the modules not offered in comments with their reasons.
std::string user_type_offers_toml(const std::vector<UserTypeOffer>& offers, const std::string& spec_dir, double target);

}  // namespace ak
