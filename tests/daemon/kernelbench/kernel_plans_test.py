"""The launch-plan examples of examples/kernelbench/ against their specs, without a GPU.

Every spec under examples/kernelbench/specs/ has its problem file and its three kernel files
(honest, .wrong, .cheating), and its tensors' shape expressions are positive at every shape it
declares. Each step's parameter list in the source is the spec's tensors in order, then the plan's
scratch buffers, then the dims, with the names and the types the contract gives them: a compiled
module shows its parameters' sizes, not which tensor each one is, so two pointers swapped would
only show as wrong numbers on the GPU. (The plans' limits at every declared shape are checked by
the C++ plan checker itself: tests/daemon/kernelbench/kernelbench_kinds_test.cpp.)

Where PyTorch is importable, each problem's module is also run on the CPU at the spec's stage
shapes and its tensors compared with the spec's (names, shapes, int64); without it, that test
is skipped.
"""
import math
import os
import re
import unittest

try:
    import tomllib
except ImportError:  # Python < 3.11
    tomllib = None

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))
EXAMPLES = os.path.join(ROOT, "examples", "kernelbench")
SPECS = os.path.join(EXAMPLES, "specs")
KERNELS = os.path.join(EXAMPLES, "kernels")

INT64_MAX = 2**63 - 1
SCRATCH_TYPES = {"float": "float", "T": "T", "int": "int", "int64": "long long"}


class Expr:
    """The specs' integer expressions, for the shapes written as expressions: + - * / %, unary
    minus, parentheses, ceil_div, min, max; `/` and `%` floor, by zero an error, int64 overflow an
    error (as kernels_cuda/spec_expression evaluates them)."""

    TOKEN = re.compile(r"\s*(?:(\d+)|([A-Za-z_]\w*)|(.))")

    def __init__(self, text):
        self.text = text
        self.tokens = [(m.group(1), m.group(2), m.group(3)) for m in self.TOKEN.finditer(text) if m.group(0).strip()]
        self.pos = 0
        self.tree = self.sum()
        if self.pos != len(self.tokens):
            raise ValueError("%r: unexpected %r" % (text, self.tokens[self.pos]))

    def peek(self):
        return self.tokens[self.pos] if self.pos < len(self.tokens) else (None, None, None)

    def take(self, op):
        if self.peek()[2] != op:
            raise ValueError("%r: expected %r at token %d" % (self.text, op, self.pos))
        self.pos += 1

    def sum(self):
        node = self.product()
        while self.peek()[2] in ("+", "-"):
            op = self.peek()[2]
            self.pos += 1
            node = (op, node, self.product())
        return node

    def product(self):
        node = self.unary()
        while self.peek()[2] in ("*", "/", "%"):
            op = self.peek()[2]
            self.pos += 1
            node = (op, node, self.unary())
        return node

    def unary(self):
        if self.peek()[2] == "-":
            self.pos += 1
            return ("neg", self.unary())
        return self.atom()

    def atom(self):
        number, name, op = self.peek()
        self.pos += 1
        if number is not None:
            return ("int", int(number))
        if name in ("ceil_div", "min", "max"):
            self.take("(")
            a = self.sum()
            self.take(",")
            b = self.sum()
            self.take(")")
            return (name, a, b)
        if name is not None:
            return ("name", name)
        if op == "(":
            node = self.sum()
            self.take(")")
            return node
        raise ValueError("%r: unexpected %r" % (self.text, op))

    def names(self, node=None):
        node = self.tree if node is None else node
        if node[0] == "name":
            return {node[1]}
        return set().union(*[self.names(n) for n in node[1:] if isinstance(n, tuple)])

    def value(self, env, node=None):
        node = self.tree if node is None else node
        kind = node[0]
        if kind == "int":
            return node[1]
        if kind == "name":
            if node[1] not in env:
                raise ValueError("%r: unknown name %s" % (self.text, node[1]))
            return env[node[1]]
        if kind == "neg":
            return self.checked(-self.value(env, node[1]))
        a, b = self.value(env, node[1]), self.value(env, node[2])
        if kind in ("/", "%", "ceil_div") and b == 0:
            raise ValueError("%r: division by zero" % self.text)
        result = {"+": lambda: a + b, "-": lambda: a - b, "*": lambda: a * b, "/": lambda: a // b,
                  "%": lambda: a % b, "ceil_div": lambda: -(-a // b), "min": lambda: min(a, b),
                  "max": lambda: max(a, b)}[kind]()
        return self.checked(result)

    def checked(self, v):
        if not -INT64_MAX - 1 <= v <= INT64_MAX:
            raise ValueError("%r: overflows int64" % self.text)
        return v


def plan_text(source):
    """ak_launch's adjacent string literals, concatenated; None when the file has no plan."""
    m = re.search(r'extern\s+"C"\s+__constant__\s+char\s+ak_launch\[\]\s*=\s*((?:\s*"(?:[^"\\\n]|\\.)*")+)\s*;', source)
    return None if m is None else "".join(re.findall(r'"((?:[^"\\\n]|\\.)*)"', m.group(1)))


STATEMENT = {
    "let": re.compile(r"let\s+([A-Za-z_]\w*)\s*=\s*(.+)$", re.S),
    "scratch": re.compile(r"scratch\s+([A-Za-z_]\w*)\s+(float|T|int|int64)\s*\[(.+)\]$", re.S),
    "step": re.compile(r"step\s+([A-Za-z_]\w*)\s+grid\((.+?)\)\s+block\((.+?)\)(?:\s+smem\((.+)\))?$", re.S),
}


def split_args(text):
    """Top-level comma-separated parts (a comma inside ceil_div(...) does not split)."""
    parts, depth, start = [], 0, 0
    for i, c in enumerate(text):
        depth += c == "("
        depth -= c == ")"
        if c == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    return parts + [text[start:]]


def parse_plan(text):
    """[(kind, name, details)] in order; raises on a statement the contract does not have."""
    plan = []
    for raw in text.split(";"):
        stmt = raw.strip()
        if not stmt:
            continue
        kind = stmt.split()[0]
        m = STATEMENT.get(kind) and STATEMENT[kind].match(stmt)
        if not m:
            raise ValueError("not a let, scratch or step statement: %r" % stmt)
        if kind == "let":
            plan.append(("let", m.group(1), Expr(m.group(2))))
        elif kind == "scratch":
            plan.append(("scratch", m.group(1), (m.group(2), Expr(m.group(3)))))
        else:
            grid = [Expr(e) for e in split_args(m.group(2))]
            block = [Expr(e) for e in split_args(m.group(3))]
            smem = Expr(m.group(4)) if m.group(4) else Expr("0")
            plan.append(("step", m.group(1), (grid, block, smem)))
    return plan


def spec_shapes(spec):
    named = [("bench", spec["bench"]), ("smoke", spec["smoke"]), ("stability", spec["stability"]),
             ("determinism", spec["determinism"])]
    named += [("sweep", s) for s in spec["sweep"]] + [("edge", s) for s in spec["edge"]]
    return named


def fixed_integers(spec):
    return {k: v for k, v in spec.get("fixed", {}).items() if isinstance(v, int) and not isinstance(v, bool)}


def step_parameters(source, step):
    """The parameter list of `template <typename T> __global__ void [__launch_bounds__(..)] step(...)`."""
    m = re.search(r"template\s*<\s*typename\s+T\s*>\s*__global__\s+void\s+(?:__launch_bounds__\([^)]*\)\s*)?"
                  + re.escape(step) + r"\s*\(([^)]*)\)", source)
    if m is None:
        return None
    params = []
    for p in m.group(1).split(","):
        p = re.sub(r"\s+", " ", p.replace("__restrict__", "")).strip()
        pm = re.match(r"(.*?)\s*([A-Za-z_]\w*)$", p)
        params.append((pm.group(1).replace(" *", "*").strip(), pm.group(2)))
    return params


def expected_parameters(spec, plan):
    params = []
    for t in spec["tensor"]:
        base = "long long" if t["type"] == "int64" else "T"
        params.append((("%s*" if t["role"] == "output" else "const %s*") % base, t["name"]))
    for kind, name, details in plan:
        if kind == "scratch":
            params.append((SCRATCH_TYPES[details[0]] + "*", name))
    return params + [("int", d) for d in spec["dims"]]


def load_specs():
    specs = {}
    for f in sorted(os.listdir(SPECS)):
        if f.endswith(".toml"):
            with open(os.path.join(SPECS, f), "rb") as fh:
                specs[f] = tomllib.load(fh)
    return specs


def read(path):
    with open(path) as f:
        return f.read()


@unittest.skipIf(tomllib is None, "needs Python 3.11's tomllib to read the specs")
class KernelPlansTest(unittest.TestCase):
    def setUp(self):
        self.specs = load_specs()

    def kernel_files(self, spec):
        stem = spec["name"][len("kb_"):]
        return [os.path.join(KERNELS, stem + suffix + ".cu") for suffix in ("", ".wrong", ".cheating")]

    def test_every_spec_has_its_problem_and_three_kernel_files(self):
        self.assertEqual(len(self.specs), 11)
        kinds = sorted(s["kind"] for s in self.specs.values())
        self.assertEqual(kinds, sorted(["convolution", "transposed_convolution", "pooling", "normalization",
                                        "normalization", "scan", "index", "loss", "matmul", "matmul", "model"]))
        for f, spec in self.specs.items():
            with self.subTest(spec=f):
                self.assertEqual(f, spec["name"] + ".toml")
                problem = read(os.path.normpath(os.path.join(SPECS, spec["reference"])))
                for needed in ("class Model(nn.Module)", "def get_inputs()", "def get_init_inputs()"):
                    self.assertIn(needed, problem)
                for dim, value in zip(spec["dims"], spec["bench"]):
                    self.assertRegex(problem, r"(?m)^%s = %d$" % (dim, value), "bench is the module's own sizes")
                for path in self.kernel_files(spec):
                    self.assertTrue(os.path.exists(path), path)
                    self.assertIsNotNone(plan_text(read(path)), path + " has no ak_launch")

    def test_shape_expressions_are_positive_at_every_declared_shape(self):
        for f, spec in self.specs.items():
            for label, shape in spec_shapes(spec):
                env = dict(fixed_integers(spec), **dict(zip(spec["dims"], shape)))
                for t in spec["tensor"]:
                    with self.subTest(spec=f, shape=label, tensor=t["name"]):
                        sizes = [e if isinstance(e, int) else Expr(e).value(env) for e in t["shape"]]
                        self.assertTrue(all(s >= 1 for s in sizes), sizes)
                        self.assertLess(math.prod(sizes) * 4, 256 << 20, "a tensor under 256 MB")

    def test_every_step_takes_the_tensors_then_the_scratch_then_the_dims(self):
        for f, spec in self.specs.items():
            for path in self.kernel_files(spec):
                source = read(path)
                plan = parse_plan(plan_text(source))
                expected = expected_parameters(spec, plan)
                for kind, name, _ in plan:
                    if kind != "step":
                        continue
                    with self.subTest(file=os.path.basename(path), step=name):
                        self.assertEqual(step_parameters(source, name), expected)

    def test_the_plan_reader_refuses_what_the_contract_does_not_have(self):
        with self.assertRaises(ValueError):
            parse_plan("launch all grid(1) block(1);")
        with self.assertRaises(ValueError):
            Expr("2 ** 3")
        with self.assertRaises(ValueError):
            Expr("n / (m - m)").value({"n": 4, "m": 3})
        with self.assertRaises(ValueError):
            Expr("n * n * n").value({"n": 2**22})
        self.assertEqual(Expr("-7 / 2").value({}), -4)   # floor, as the plan's division
        self.assertEqual(Expr("ceil_div(n, 64) * min(n, 3) % 5").value({"n": 65}), 1)


@unittest.skipIf(tomllib is None, "needs Python 3.11's tomllib to read the specs")
class ModulesMatchSpecsTest(unittest.TestCase):
    """The module at each stage shape has the spec's tensors: its inputs, named_parameters (dots
    as underscores), named_buffers and outputs, with the spec's shapes and int64 where it says."""

    def test_the_modules_tensors_are_the_specs_at_every_stage_shape(self):
        try:
            import torch
        except ImportError:
            self.skipTest("no PyTorch: the modules cannot be run")
        for f, spec in load_specs().items():
            problem = read(os.path.normpath(os.path.join(SPECS, spec["reference"])))
            for label, shape in spec_shapes(spec)[1:]:   # all but bench: CPU time
                env = dict(fixed_integers(spec), **dict(zip(spec["dims"], shape)))
                module = {}
                exec(compile(problem, spec["reference"], "exec"), module)
                module.update(spec.get("fixed", {}))
                module.update(zip(spec["dims"], shape))
                torch.manual_seed(0)
                model = module["Model"](*module["get_init_inputs"]())
                inputs = module["get_inputs"]()
                with torch.no_grad():
                    outputs = model(*inputs)
                outputs = list(outputs) if isinstance(outputs, (tuple, list)) else [outputs]
                real = [(None, t) for t in inputs]
                real += [(n.replace(".", "_"), p) for n, p in model.named_parameters()]
                real += [(n.replace(".", "_"), b) for n, b in model.named_buffers()]
                real += [(None, t) for t in outputs]
                with self.subTest(spec=f, shape=label):
                    self.assertEqual(len(real), len(spec["tensor"]))
                    for t, (name, tensor) in zip(spec["tensor"], real):
                        sizes = [e if isinstance(e, int) else Expr(e).value(env) for e in t["shape"]]
                        self.assertEqual(list(tensor.shape), sizes, t["name"])
                        self.assertEqual(tensor.dtype == torch.int64, t["type"] == "int64", t["name"])
                        if name is not None:
                            self.assertEqual(name, t["name"])


if __name__ == "__main__":
    unittest.main()
