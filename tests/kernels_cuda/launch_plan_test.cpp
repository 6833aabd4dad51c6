// The launch plan of a user type's kernel file: its grammar, its checks against a spec at every
// shape, and its text read from a kernel file's source for the compile.
#include <catch2/catch.hpp>

#include "kernels_cuda/launch_plan.hpp"
#include "kernels_cuda/user_type.hpp"
#include "tests/kernels_cuda/user_type_specs.hpp"

using namespace ak;
using Catch::Contains;

namespace {

LaunchPlan plan_of(const std::string& text) {
  auto p = parse_launch_plan(text);
  INFO(text << ": " << (p ? "" : p.error().message));
  REQUIRE(p.ok());
  return *p;
}

std::string refusal(const std::string& text) {
  auto p = parse_launch_plan(text);
  INFO(text);
  REQUIRE_FALSE(p.ok());
  return p.error().message;
}

/// The log-softmax spec of the tests (dims batch_size, dim; [fixed] reduce_dim = 1).
UserTypeSpec rows_spec(const std::string& extra_fixed = "") {
  std::string text = test::kLogSoftmaxSpec;
  if (!extra_fixed.empty()) text.replace(text.find("reduce_dim = 1"), 14, "reduce_dim = 1\n" + extra_fixed);
  auto s = parse_user_type(text, "types/rows.toml");
  INFO((s.ok() ? "" : s.error().message));
  REQUIRE(s.ok());
  return *s;
}

std::string check_refusal(const std::string& text, const UserTypeSpec& spec, const LaunchLimits& limits = {}) {
  const LaunchPlan p = plan_of(text);
  auto s = check_launch_plan(p, spec, limits);
  INFO(text);
  REQUIRE_FALSE(s.ok());
  return s.error().message;
}

const char* kTwoSteps =
    "let blocks = ceil_div(batch_size * dim, 256);"
    "scratch partial float[blocks];"
    "step sum_blocks grid(blocks) block(256) smem(1024);"
    "step finish grid(batch_size, 1, 1) block(32, 8);";

}  // namespace

TEST_CASE("a plan's statements are read in order with their names, sizes and steps", "[launch_plan]") {
  const LaunchPlan p = plan_of(kTwoSteps);
  REQUIRE(p.statements.size() == 4);
  CHECK(p.statements[0].kind == PlanStatement::Let);
  CHECK(p.statements[0].name == "blocks");
  CHECK(p.statements[0].exprs[0].text() == "ceil_div(batch_size * dim, 256)");
  CHECK(p.statements[1].kind == PlanStatement::Scratch);
  CHECK(p.statements[1].elem == ScratchElem::Float);
  CHECK(p.statements[1].text == "scratch partial float[blocks]");
  CHECK(p.step_names() == std::vector<std::string>{"sum_blocks", "finish"});
  REQUIRE(p.scratch().size() == 1);
  CHECK(p.scratch()[0]->name == "partial");
  const PlanStatement& finish = p.statements[3];
  CHECK(finish.grid_dims == 3);
  CHECK(finish.block_dims == 2);
  CHECK_FALSE(finish.has_smem);
  CHECK(p.statements[2].has_smem);

  // Spaces and newlines anywhere, clauses in any order, every element type.
  const LaunchPlan q = plan_of("\n  scratch  a T [ 4 ] ;\tscratch b int[1];scratch c int64[n * 2];\n"
                               "step  s  smem( 0 )  block( 64 )  grid( min(n, 8) , max(1, n / 2) ) ;  \n");
  CHECK(q.scratch()[0]->elem == ScratchElem::T);
  CHECK(q.scratch()[1]->elem == ScratchElem::Int);
  CHECK(q.scratch()[2]->elem == ScratchElem::Int64);
  CHECK(q.statements[3].text == "step s smem( 0 ) block( 64 ) grid( min(n, 8) , max(1, n / 2) )");
  CHECK(q.statements[3].grid_dims == 2);
}

TEST_CASE("a plan evaluated at a shape gives every step's geometry and every scratch buffer's bytes", "[launch_plan]") {
  const LaunchPlan p = plan_of(kTwoSteps);
  auto planned = evaluate_launch_plan(p, {{"batch_size", 7}, {"dim", 1000}}, DType::F16, LaunchLimits{});
  REQUIRE(planned.ok());
  REQUIRE(planned->steps.size() == 2);
  CHECK(planned->steps[0].name == "sum_blocks");
  CHECK(planned->steps[0].grid == std::array<int64_t, 3>{28, 1, 1});
  CHECK(planned->steps[0].block == std::array<int64_t, 3>{256, 1, 1});
  CHECK(planned->steps[0].smem == 1024);
  CHECK(planned->steps[1].grid == std::array<int64_t, 3>{7, 1, 1});
  CHECK(planned->steps[1].block == std::array<int64_t, 3>{32, 8, 1});
  CHECK(planned->steps[1].smem == 0);
  CHECK(planned->scratch_bytes == std::vector<uint64_t>{28 * 4});

  const LaunchPlan t = plan_of("scratch a T[n]; scratch b int64[n]; scratch c int[n]; step s grid(1) block(1);");
  CHECK(evaluate_launch_plan(t, {{"n", 10}}, DType::F16, {})->scratch_bytes == std::vector<uint64_t>{20, 80, 40});
  CHECK(evaluate_launch_plan(t, {{"n", 10}}, DType::F32, {})->scratch_bytes == std::vector<uint64_t>{40, 80, 40});
}

TEST_CASE("a malformed plan is refused naming the statement and what was expected", "[launch_plan]") {
  struct Case {
    std::string text;
    const char* expected;
  };
  for (const Case& c : std::vector<Case>{
           {"", "declares no step"},
           {"let a = 1;", "declares no step"},
           {"step s grid(1) block(1)", "`step s grid(1) block(1)` does not end with ';'"},
           {"step s grid(1) block(1);;", "statement 2 is empty"},
           {"launch s grid(1) block(1);", "`launch s grid(1) block(1);`: starts with \"launch\": expected let NAME = EXPR;"},
           {"let = 3; step s grid(1) block(1);", "let \"\" is not a name"},
           {"let a 3; step s grid(1) block(1);", "found '3' after let a: expected '='"},
           {"let a = ; step s grid(1) block(1);", "the value is empty"},
           {"let a = 2 ** 3; step s grid(1) block(1);", "`let a = 2 ** 3;`: the value: at character 4 of \"2 ** 3\""},
           {"scratch b double[4]; step s grid(1) block(1);", "scratch b holds \"double\": expected float, T, int or int64"},
           {"scratch b float 4; step s grid(1) block(1);", "expected '[' and the element count"},
           {"scratch b float[4] x; step s grid(1) block(1);", "to end with ']'"},
           {"scratch b float[]; step s grid(1) block(1);", "the element count is empty"},
           {"step s grid(1);", "a step needs grid(...) and block(...)"},
           {"step s block(1);", "a step needs grid(...) and block(...)"},
           {"step s grid(1) block(1) grid(2);", "grid(...) is given twice"},
           {"step s grid(1, 2, 3, 4) block(1);", "grid has 4 values: expected 1 to 3 (x, y, z)"},
           {"step s grid(1) block(1) smem(1, 2);", "smem has 2 values: expected one"},
           {"step s grid(1) block(1) shared(4);", "found \"shared\": expected grid(...), block(...) or smem(...)"},
           {"step s grid(ceil_div(1, 2) block(1);", "grid( has no closing ')'"},
           {"step s grid(1,) block(1);", "grid.y is empty"},
           {"step s grid(1) block(pow(2, 5));", "block.x: at character 4 of \"pow(2, 5)\""},
           {"step s grid(1) block(1) [4];", "found '[4]': expected grid(...)"},
           {"step s grid(\"1\") block(1);", "at character 1 of \"\"1\"\""},
       }) {
    INFO(c.text);
    CHECK_THAT(refusal(c.text), Contains(c.expected));
  }
}

TEST_CASE("a plan's names are identifiers that no C++ word, function or other statement has", "[launch_plan]") {
  for (const char* word : {"int", "template", "class", "operator", "blockIdx", "half", "__x", "ak_steps", "T", "main", "delete"}) {
    INFO(word);
    CHECK_THAT(refusal(std::string("step ") + word + " grid(1) block(1);"), Contains("is a C++ word or a name the contract owns"));
    CHECK_THAT(refusal(std::string("let ") + word + " = 1; step s grid(1) block(1);"), Contains("C++ word"));
  }
  CHECK_THAT(refusal("let min = 1; step s grid(1) block(1);"), Contains("is a function of the expressions"));
  CHECK_THAT(refusal("step 9lives grid(1) block(1);"), Contains("step \"9lives\" is not a name"));
  CHECK_THAT(refusal("step s grid(1) block(1); step s grid(2) block(2);"), Contains("\"s\" is defined twice"));
  CHECK_THAT(refusal("let s = 1; step s grid(1) block(1);"), Contains("\"s\" is defined twice"));
  CHECK_THAT(refusal("scratch s float[1]; let s = 1; step t grid(1) block(1);"), Contains("\"s\" is defined twice"));
  CHECK_THAT(refusal("step " + std::string(65, 'a') + " grid(1) block(1);"), Contains("is not a name"));
}

TEST_CASE("a plan is refused past 16 steps, 16 scratch buffers, 32 lets or 8 KiB", "[launch_plan]") {
  std::string steps;
  for (int i = 0; i < 16; ++i) steps += "step s" + std::to_string(i) + " grid(1) block(1);";
  CHECK(plan_of(steps).step_names().size() == 16);
  CHECK_THAT(refusal(steps + "step s16 grid(1) block(1);"), Contains("`step s16 grid(1) block(1);`: more than 16 step statements"));
  std::string scratch;
  for (int i = 0; i < 17; ++i) scratch += "scratch b" + std::to_string(i) + " float[1];";
  CHECK_THAT(refusal(scratch + "step s grid(1) block(1);"), Contains("more than 16 scratch statements"));
  std::string lets;
  for (int i = 0; i < 33; ++i) lets += "let v" + std::to_string(i) + " = 1;";
  CHECK_THAT(refusal(lets + "step s grid(1) block(1);"), Contains("more than 32 let statements"));
  CHECK_THAT(refusal(std::string(kMaxPlanBytes - 24, ' ') + "step s grid(1) block(1);x"), Contains("is 8193 bytes: expected at most 8192"));
  CHECK(plan_of(std::string(kMaxPlanBytes - 24, ' ') + "step s grid(1) block(1);").step_names().size() == 1);
  // Huge text of one statement: refused before any parse, and a message that does not echo it whole.
  const std::string huge(1 << 20, 'a');
  CHECK_THAT(refusal(huge), Contains("bytes: expected at most 8192"));
  const std::string long_expr = "step s grid(" + std::string(2000, '1') + ") block(1);";
  CHECK(refusal(long_expr).size() < 600);
}

TEST_CASE("a plan's hostile text is refused without echoing control characters", "[launch_plan]") {
  CHECK_THAT(refusal(std::string("step s grid(1) block(1);\x1b[2J")), Contains("byte 0x1b at character 25: expected printable ASCII"));
  CHECK_THAT(refusal(std::string("step s grid(1) block(1);\xc3\xa9", 27)), Contains("byte 0xc3"));
  CHECK_THAT(refusal(std::string("step s grid(1) block(1);\0", 25)), Contains("byte 0x00"));
  std::string deep = "step s grid(" + std::string(200, '(') + "1" + std::string(200, ')') + ") block(1);";
  CHECK_THAT(refusal(deep), Contains("fewer nested parentheses"));
  std::string calls = "step s grid(";
  for (int i = 0; i < 70; ++i) calls += "max(1, ";
  calls += "1" + std::string(70, ')') + ") block(1);";
  CHECK_THAT(refusal(calls), Contains("fewer nested"));
}

TEST_CASE("a plan is refused at the shape where a grid, block, smem or scratch leaves its bounds", "[launch_plan]") {
  const LaunchLimits limits;
  auto at = [&](const std::string& text, std::map<std::string, int64_t> v = {{"n", 10}}, DType d = DType::F32,
                const LaunchLimits& l = LaunchLimits{}) {
    auto r = evaluate_launch_plan(plan_of(text), v, d, l);
    INFO(text);
    REQUIRE_FALSE(r.ok());
    return r.error().message;
  };
  CHECK_THAT(at("step s grid(n - 10) block(1);"), Contains("`step s grid(n - 10) block(1);`: grid.x = n - 10 = 0: expected 1 to 2147483647"));
  CHECK_THAT(at("step s grid(n * 300000000) block(1);"), Contains("grid.x = n * 300000000 = 3000000000: expected 1 to 2147483647"));
  CHECK_THAT(at("step s grid(1, 65536) block(1);"), Contains("grid.y = 65536 = 65536: expected 1 to 65535"));
  CHECK_THAT(at("step s grid(1, 1, 0) block(1);"), Contains("grid.z = 0 = 0"));
  CHECK_THAT(at("step s grid(1) block(1025);"), Contains("block.x = 1025 = 1025: expected 1 to 1024"));
  CHECK_THAT(at("step s grid(1) block(1, 1, 65);"), Contains("block.z = 65 = 65: expected 1 to 64"));
  CHECK_THAT(at("step s grid(1) block(64, 32);"), Contains("the block has 2048 threads: expected at most 1024"));
  CHECK_THAT(at("step s grid(1) block(0);"), Contains("block.x = 0 = 0"));
  CHECK_THAT(at("step s grid(1) block(1) smem(n * 100000);"), Contains("smem = n * 100000 = 1000000 bytes: expected 0 to 232448"));
  CHECK_THAT(at("step s grid(1) block(1) smem(-1);"), Contains("smem = -1 = -1 bytes"));
  CHECK_THAT(at("scratch b float[n - 10]; step s grid(1) block(1);"), Contains("scratch b has n - 10 = 0 elements: expected at least 1"));
  CHECK_THAT(at("step s grid(ceil_div(n, n - 10)) block(1);"),
             Contains("`step s grid(ceil_div(n, n - 10)) block(1);`: \"ceil_div(n, n - 10)\": division by zero: ceil_div(10, 0)"));
  CHECK_THAT(at("let big = n * 100000000000000000; let bigger = big * 10; step s grid(1) block(1);"), Contains("1000000000000000000 * 10 overflows"));
  CHECK_THAT(at("step s grid(m) block(1);"), Contains("'m' has no value here"));
  LaunchLimits small;
  small.scratch_cap_bytes = uint64_t(1) << 20;
  CHECK(evaluate_launch_plan(plan_of("scratch a float[262144]; step s grid(1) block(1);"), {}, DType::F32, small).ok());
  CHECK_THAT(at("scratch a float[200000]; scratch b T[62145]; step s grid(1) block(1);", {}, DType::F32, small),
             Contains("scratch b takes 62145 x 4 bytes, and the scratch before it 800000: above the cap of 1 MiB in all"));
  CHECK(evaluate_launch_plan(plan_of("scratch a float[200000]; scratch b T[62145]; step s grid(1) block(1);"), {}, DType::F16, small).ok());
  // Element counts whose bytes overflow 64 bits are over any cap, not wrapped under it.
  CHECK_THAT(at("scratch a int64[461168601842738790 * 10]; step s grid(1) block(1);", {}), Contains("above the cap"));
  LaunchLimits tight;
  tight.max_dynamic_smem = 49152;
  CHECK_THAT(at("step s grid(1) block(1) smem(49153);", {}, DType::F32, tight), Contains("expected 0 to 49152"));
}

TEST_CASE("a plan is checked against its spec at every declared shape and dtype, naming the shape", "[launch_plan]") {
  const UserTypeSpec spec = rows_spec();   // smoke [4, 1000], sweep [64, 4096] [7, 65537], stability [16, 2048], edge [1, 1]
  CHECK(check_launch_plan(plan_of("let rows = batch_size * reduce_dim; step s grid(rows) block(256);"), spec, {}).ok());
  // The edge shape has dim = 1: dim - 1 is 0 there alone.
  CHECK_THAT(check_refusal("step s grid(ceil_div(batch_size, dim - 1)) block(256);", spec),
             Contains("at edge shape 1 (batch_size = 1, dim = 1, fp32): ak_launch: `step s grid(ceil_div(batch_size, dim - 1)) block(256);`: "
                      "\"ceil_div(batch_size, dim - 1)\": division by zero: ceil_div(1, 0)"));
  CHECK_THAT(check_refusal("step s grid(1) block(ceil_div(dim, 64));", spec),
             Contains("at sweep shape 2 (batch_size = 7, dim = 65537, fp32)") && Contains("block.x = ceil_div(dim, 64) = 1025"));
  CHECK_THAT(check_refusal("step s grid(batch_size - 8) block(1);", spec), Contains("at the smoke shape (batch_size = 4, dim = 1000, fp32)"));
  UserTypeSpec with_bench = spec;
  with_bench.bench = {100000, 1};
  CHECK_THAT(check_refusal("step s grid(1, batch_size) block(1);", with_bench), Contains("at the bench shape (batch_size = 100000, dim = 1, fp32)"));
  LaunchLimits small;
  small.scratch_cap_bytes = uint64_t(1) << 20;
  CHECK_THAT(check_refusal("scratch buf float[batch_size * dim]; step s grid(1) block(1);", spec, small),
             Contains("at sweep shape 2 (batch_size = 7, dim = 65537, fp32)") && Contains("above the cap of 1 MiB"));
}

TEST_CASE("a plan reads only the dims, the integer [fixed] globals and the lets before it", "[launch_plan]") {
  const UserTypeSpec spec = rows_spec("scale = 0.5\nname_of = \"x\"");
  CHECK_THAT(check_refusal("step s grid(rows) block(1);", spec),
             Contains("`step s grid(rows) block(1);`: reads 'rows', which is no dim, integer [fixed] global nor let before it "
                      "(known here: batch_size, dim, reduce_dim)"));
  CHECK_THAT(check_refusal("step s grid(rows) block(1); let rows = batch_size;", spec), Contains("reads 'rows'"));
  CHECK_THAT(check_refusal("step s grid(scale) block(1);", spec), Contains("reads 'scale', a [fixed] global that is not an integer"));
  CHECK_THAT(check_refusal("let dim = 3; step s grid(1) block(1);", spec), Contains("\"dim\" is already a dim, a [fixed] global or a tensor"));
  CHECK_THAT(check_refusal("scratch x float[1]; step s grid(1) block(1);", spec), Contains("\"x\" is already"));
  CHECK_THAT(check_refusal("step reduce_dim grid(1) block(1);", spec), Contains("\"reduce_dim\" is already"));
  const auto values = plan_values(spec, {3, 5});
  CHECK(values == std::map<std::string, int64_t>{{"batch_size", 3}, {"dim", 5}, {"reduce_dim", 1}});
}

TEST_CASE("a kernel file's plan is read from its source's string literals, comments skipped", "[launch_plan]") {
  const std::string source =
      "// ak_launch[] = \"step commented grid(1) block(1);\";\n"
      "/* extern \"C\" __constant__ char ak_launch[] = \"step block_comment grid(1) block(1);\"; */\n"
      "const char* s = \"ak_launch[] = \\\"step in_string grid(1) block(1);\\\";\";\n"
      "int big = 1'000'000;  char q = '\"';\n"
      "extern \"C\" __constant__ char ak_launch[] =\n"
      "    \"let n = batch_size * dim;\"  // the elements\n"
      "    \"step first grid(ceil_div(n, 256)) \"   /* split mid-statement */ \"block(256);\"\n"
      "    \"step second grid(1) block(32);\";\n"
      "template <typename T> __global__ void first(const T* x, T* out, int batch_size, int dim) { (void)ak_launch[0]; }\n";
  auto text = launch_plan_source_text(source);
  INFO((text ? "" : text.error().message));
  REQUIRE(text.ok());
  REQUIRE(text->has_value());
  CHECK(**text == "let n = batch_size * dim;step first grid(ceil_div(n, 256)) block(256);step second grid(1) block(32);");
  auto names = launch_step_names(source);
  REQUIRE(names.ok());
  CHECK(*names == std::vector<std::string>{"first", "second"});

  // No plan: the old contract.
  auto none = launch_step_names("extern \"C\" __constant__ int ak_block_threads = 256; // ak_launch[] = \"step x grid(1) block(1);\";\n");
  REQUIRE(none.ok());
  CHECK(none->empty());
  CHECK(launch_plan_source_text("const char* r = R\"x(ak_launch[] = \"step a grid(1) block(1);\";)x\";")->has_value() == false);
  CHECK(launch_step_names("__constant__ char ak_launch[64] = \"step a grid(1) block(1);\";")->size() == 1);
  CHECK(launch_step_names("char ak_launch[] = \"step a grid(1) \\\n\";").error().message.find("escape") != std::string::npos);
}

TEST_CASE("a plan not written as string literals alone is refused with the way to write it", "[launch_plan]") {
  for (const char* source : {"extern \"C\" __constant__ char ak_launch[] = PLAN;",
                             "extern \"C\" __constant__ char ak_launch[] = {'s', 't'};",
                             "extern \"C\" __constant__ char ak_launch[] = \"step a grid(1) block(1);\" PLAN;",
                             "extern \"C\" __constant__ char ak_launch[] = u8\"step a grid(1) block(1);\";",
                             "extern \"C\" __constant__ char ak_launch[] = \"step a grid(1) block(1);\""}) {
    INFO(source);
    auto t = launch_plan_source_text(source);
    REQUIRE_FALSE(t.ok());
    CHECK_THAT(t.error().message, Contains("write ak_launch as string literals only"));
  }
  CHECK_THAT(launch_plan_source_text("char ak_launch[] = \"step a grid(1) block(1);\";\nchar ak_launch[] = \"step b grid(1) block(1);\";")
                 .error().message,
             Contains("ak_launch is defined twice"));
  CHECK_THAT(launch_plan_source_text("char ak_launch[] = \"\\x41\";").error().message, Contains("the escape \\x in its text"));
  CHECK_THAT(launch_plan_source_text("char ak_launch[] = \"step a grid(1)").error().message, Contains("no closing"));
  std::string huge = "char ak_launch[] = ";
  for (int i = 0; i < 2000; ++i) huge += "\"step s grid(1) block(1);\" ";
  CHECK_THAT(launch_plan_source_text(huge + ";").error().message, Contains("over 8192 bytes"));
  CHECK_THAT(launch_step_names("char ak_launch[] = \"step int grid(1) block(1);\";").error().message, Contains("C++ word"));
}
