#pragma once
// Compares two user types field by field, as a spec file holds them: what a writer wrote and the
// reader read back must agree on each (the sources and the file's own text are not compared).
#include <catch2/catch.hpp>

#include "kernels_cuda/user_type.hpp"

namespace ak::test {

inline std::string size_terms_text(const std::vector<SizeTerm>& terms) {
  std::string out;
  for (const SizeTerm& t : terms) out += (out.empty() ? "" : ", ") + std::string(t.expr ? "expr " : t.dim.empty() ? "int " : "dim ") + t.text();
  return "[" + out + "]";
}

inline std::string bound_text(const std::optional<SizeTerm>& t) {
  return t ? size_terms_text({*t}) : "none";
}

inline void check_same_user_type(const UserTypeSpec& a, const UserTypeSpec& b) {
  CHECK(a.name == b.name);
  CHECK(a.summary == b.summary);
  CHECK(a.reference == b.reference);
  CHECK(a.starter == b.starter);
  CHECK(a.kind == b.kind);
  CHECK(a.grid == b.grid);
  CHECK(a.dtypes == b.dtypes);
  CHECK(a.metric == b.metric);
  CHECK(a.bytes == b.bytes);
  CHECK(a.flops == b.flops);
  CHECK(a.dims == b.dims);
  CHECK(a.bench == b.bench);
  CHECK(a.smoke == b.smoke);
  CHECK(a.sweep == b.sweep);
  CHECK(a.stability == b.stability);
  CHECK(a.determinism == b.determinism);
  CHECK(a.edge == b.edge);
  CHECK(a.fixed == b.fixed);
  CHECK(a.tolerance == b.tolerance);
  REQUIRE(a.tensors.size() == b.tensors.size());
  for (size_t i = 0; i < a.tensors.size(); ++i) {
    const UserTensor &x = a.tensors[i], &y = b.tensors[i];
    INFO("tensor " << i << " (" << x.name << ")");
    CHECK(x.name == y.name);
    CHECK(x.role == y.role);
    CHECK(size_terms_text(x.shape) == size_terms_text(y.shape));
    CHECK(x.int64 == y.int64);
    CHECK(bound_text(x.low) == bound_text(y.low));
    CHECK(bound_text(x.high) == bound_text(y.high));
    CHECK(x.least == y.least);
    CHECK(x.most == y.most);
  }
}

}  // namespace ak::test
