#pragma once
/// Time as the loop sees it: the real steady clock, or one a test moves by hand.
#include <chrono>

namespace ak {

class Clock {
 public:
  virtual ~Clock() = default;
  virtual double now_s() = 0;   ///< seconds from an arbitrary start
};

class SteadyClock : public Clock {
 public:
  double now_s() override {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  }
};

}  // namespace ak
