#include "harness/judging/builtin_counters_pass.hpp"

#include <optional>

#include "harness/judging/evaluation_seeds.hpp"
#include "harness/judging/reference_outputs.hpp"

namespace ak {
namespace {

class BuiltinOperands final : public CountersPassOperands {
 public:
  BuiltinOperands(GpuContext& gpu, const DeviceInputs& inputs, const DeviceChecks& checks, const KernelSpec& spec,
                  const Shape& shape, DType d, const LaunchableKernel& reference, uint64_t seed)
      : gpu_(gpu), drv_(gpu.driver()), inputs_(inputs), checks_(checks), spec_(spec), shape_(shape), d_(d),
        reference_(reference), seed_(seed) {}

  Status allocate() override;
  Result<RunBuffers> draw(int pass) override;
  Status judge(int pass, const std::string& where) override;
  bool sticky() const override { return sticky_; }

 private:
  GpuContext& gpu_;
  const CudaDriver& drv_;
  const DeviceInputs& inputs_;
  const DeviceChecks& checks_;
  const KernelSpec& spec_;
  const Shape& shape_;
  const DType d_;
  const LaunchableKernel& reference_;
  const uint64_t seed_;
  std::optional<RunSet> set_;
  std::vector<DeviceBuffer> pristine_;   ///< each input as drawn, to find a write into it
  bool sticky_ = false;
};

Status BuiltinOperands::allocate() {
  auto set = allocate_run_set(gpu_, spec_, shape_, d_);
  if (!set) return set.error();
  set_ = std::move(*set);
  for (auto& b : set_->inputs) {
    auto copy = gpu_.alloc(b.bytes());
    if (!copy) return copy.error();
    pristine_.push_back(std::move(*copy));
  }
  return ok();
}

Result<RunBuffers> BuiltinOperands::draw(int pass) {
  if (auto s = inputs_.fill(spec_, shape_, d_, *set_, mix_seed(seed_ + uint64_t(pass))); !s) return s.error();
  for (size_t i = 0; i < set_->inputs.size(); ++i)
    if (auto s = cu_check(drv_.cuMemcpyDtoD(pristine_[i].ptr(), set_->inputs[i].ptr(), set_->inputs[i].bytes()),
                          "keeping a copy of the counters pass's inputs");
        !s)
      return s.error();
  if (auto s = poison_writable(gpu_, *set_); !s) return s.error();
  return set_->view();
}

Status BuiltinOperands::judge(int pass, const std::string& where) {
  if (std::string left = counters_left_set(gpu_, *set_); !left.empty()) return error(left + " after " + where);
  for (size_t i = 0; i < set_->inputs.size(); ++i) {
    auto differ = checks_.differing_bytes(set_->inputs[i], pristine_[i], pristine_[i].bytes());
    if (!differ) return differ.error();
    if (*differ) return error("the kernel wrote into its input during " + where);
  }
  CUresult r = CUDA_SUCCESS;
  auto expected = reference_outputs(gpu_, checks_, spec_, reference_, set_->view(), shape_, d_,
                                    mix_seed(seed_ ^ uint64_t(pass) << 32), r);
  if (!expected) {
    sticky_ = r != CUDA_SUCCESS && cu_error_is_sticky(r);
    return expected.error();
  }
  Status judged = ok();
  for (size_t i = 0; i < set_->outputs.size() && judged; ++i) {
    auto cmp = expected->judge(i, set_->outputs[i], d_, spec_.tolerance(d_));
    if (!cmp) judged = cmp.error();
    else if (!cmp->pass()) judged = error("wrong output during " + where + ": " + cmp->describe() + expected->sampled_note());
  }
  // Wiped whatever the judging found: device memory a later launch could read says nothing of it.
  if (auto s = expected->wipe(); !s) return s;
  return judged;
}

}  // namespace

std::unique_ptr<CountersPassOperands> builtin_counters_operands(GpuContext& gpu, const DeviceInputs& inputs,
                                                                const DeviceChecks& checks, const KernelSpec& spec,
                                                                const Shape& shape, DType d,
                                                                const LaunchableKernel& reference, uint64_t seed) {
  return std::make_unique<BuiltinOperands>(gpu, inputs, checks, spec, shape, d, reference, seed);
}

}  // namespace ak
