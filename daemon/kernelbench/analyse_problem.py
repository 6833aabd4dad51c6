"""Reads a problem in KernelBench's format (class Model, get_inputs, get_init_inputs, size globals)
without running it and prints what `autokernel kernelbench` needs to write a user type's spec, as
JSON on stdout: the integer globals and which of them are sizes, the input tensors, the parameters
and buffers the common layers create (named_parameters then named_buffers order), the kind of the
forward (elementwise, rowwise, reduction, gemm_epilogue) and its output's shape, or a refusal that
names the construct and its line.

Standard library only (ast): it runs where PyTorch is not installed, and it never imports or runs
the problem. Where it cannot tell what the code does, it refuses rather than guesses.

usage: python3 analyse_problem.py FILE.py   (exit 0 with the JSON, 2 when the file cannot be read)
"""
import ast
import json
import math
import sys


class Refused(Exception):
    """The problem is outside what a user type can express; the message says why and where."""


def refuse(node, what):
    line = getattr(node, "lineno", None)
    raise Refused(what + (" (line %d)" % line if line else ""))


# ---- the values the analysis tracks ----

class Tensor:
    """A tensor of a symbolic shape: each entry a size global's name or an integer."""

    def __init__(self, shape, origin=None, dtype="float"):
        self.shape = list(shape)
        self.origin = origin  # ("input", name) or ("parameter", name) while it is one unchanged
        self.transposed = False
        self.dtype = dtype


class Const:
    """A Python number, known or not (a float constant the module passes in, say)."""

    def __init__(self, value=None):
        self.value = value


class MaxTuple:
    """torch.max(x, dim) and friends: (values, indices)."""

    def __init__(self, values):
        self.values = values


class Layer:
    def __init__(self, kind, node, **config):
        self.kind = kind
        self.node = node
        self.config = config


ELEMENTWISE_FUNCTIONS = {
    "relu", "relu_", "sigmoid", "tanh", "exp", "exp2", "log", "log2", "log10", "log1p", "expm1", "abs",
    "neg", "sqrt", "rsqrt", "sin", "cos", "erf", "erfc", "gelu", "silu", "mish", "softplus", "elu",
    "selu", "celu", "leaky_relu", "hardtanh", "hardsigmoid", "hardswish", "softsign", "relu6",
    "logsigmoid", "tanhshrink", "square", "reciprocal", "sign", "floor", "ceil", "round", "clamp",
    "clamp_min", "clamp_max", "clip", "dropout", "clone", "detach", "contiguous", "float",
    "sigmoid_", "tanh_", "exp_", "trunc", "frac", "swish",
}
BINARY_FUNCTIONS = {"add", "sub", "subtract", "mul", "multiply", "div", "divide", "true_divide",
                    "maximum", "minimum", "pow", "fmax", "fmin", "atan2", "remainder", "fmod"}
ELEMENTWISE_MODULES = {
    "ReLU", "GELU", "Tanh", "Sigmoid", "LeakyReLU", "Hardtanh", "SiLU", "Mish", "Softplus", "ELU",
    "SELU", "CELU", "Hardsigmoid", "Hardswish", "Softsign", "Dropout", "Identity", "ReLU6",
    "LogSigmoid", "Tanhshrink", "Softshrink", "Hardshrink", "Threshold",
}
REDUCTIONS = {"sum", "mean", "amax", "amin", "max", "min", "prod", "logsumexp", "norm"}
ROW_FUNCTIONS = {"softmax", "log_softmax"}
REFUSED_NAMES = [
    ("ConvTranspose", "a transposed convolution"), ("conv_transpose", "a transposed convolution"),
    ("Conv", "a convolution"), ("conv", "a convolution"), ("Pool", "pooling"), ("pool", "pooling"),
    ("cumsum", "a scan (cumsum)"), ("cumprod", "a scan (cumprod)"), ("cummax", "a scan (cummax)"),
    ("cummin", "a scan (cummin)"), ("flip", "flip"), ("attention", "attention"), ("Attention", "attention"),
    ("RNN", "a recurrent layer"), ("LSTM", "a recurrent layer"), ("GRU", "a recurrent layer"),
    ("sort", "sorting"), ("topk", "top-k"), ("argmax", "an index output (argmax)"),
    ("argmin", "an index output (argmin)"), ("Loss", "a loss (reduces to a scalar)"),
    ("_loss", "a loss (reduces to a scalar)"), ("cross_entropy", "a loss (reduces to a scalar)"),
    ("kl_div", "a loss (reduces to a scalar)"), ("GroupNorm", "GroupNorm (channels must stay a "
     "multiple of num_groups)"), ("group_norm", "GroupNorm"), ("InstanceNorm", "InstanceNorm"),
    ("instance_norm", "InstanceNorm"), ("Embedding", "an embedding lookup"), ("einsum", "einsum"),
    ("bmm", "a batched matmul"), ("baddbmm", "a batched matmul"), ("tril", "tril/triu (a masked output)"),
    ("triu", "tril/triu (a masked output)"), ("diag", "diag"), ("Sequential", "nn.Sequential"),
    ("ModuleList", "nn.ModuleList"), ("interpolate", "interpolation"), ("Upsample", "interpolation"),
    ("pad", "padding"), ("gather", "gather"), ("scatter", "scatter"), ("index", "indexing"),
    ("masked", "masking"), ("where", "torch.where"),
]


def refused_construct(name):
    for needle, what in REFUSED_NAMES:
        if needle in name:
            return "%s: %s" % (what, name)
    return None


def dotted(node):
    """'torch.nn.functional.gelu' for an attribute chain of names, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


class Problem:
    def __init__(self, source, path):
        self.path = path
        self.tree = ast.parse(source, filename=path)
        self.globals = {}        # name -> value (int, float, tuple of atoms, ...), the module's last word
        self.global_line = {}
        self.derived = {}        # name -> the globals its value is computed from
        self.roles = {}          # name -> ("size" | "axis", why)
        self.inputs = []
        self.parameters = []     # (name, shape, owner order key)
        self.buffers = []
        self.attrs = {}          # self.<attr> -> Layer | Const | atoms | Tensor(parameter)
        self.model = None
        self.functions = {}
        self.events = []

    # ---- module level ----
    def read_module(self):
        for stmt in self.tree.body:
            if isinstance(stmt, ast.ClassDef) and stmt.name == "Model":
                self.model = stmt
            elif isinstance(stmt, ast.FunctionDef):
                self.functions[stmt.name] = stmt
            elif isinstance(stmt, ast.Assign):
                self.read_global_assign(stmt)
            elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value is not None:
                self.set_global(stmt.target.id, stmt.value, stmt)
        for needed, node in (("Model", self.model), ("get_inputs", self.functions.get("get_inputs")),
                             ("get_init_inputs", self.functions.get("get_init_inputs"))):
            if node is None:
                raise Refused("no %s: not a problem in KernelBench's format" % needed)

    def read_global_assign(self, stmt):
        for target in stmt.targets:
            if isinstance(target, ast.Name):
                self.set_global(target.id, stmt.value, stmt)
            elif isinstance(target, ast.Tuple) and isinstance(stmt.value, ast.Tuple) and \
                    len(target.elts) == len(stmt.value.elts):
                for t, v in zip(target.elts, stmt.value.elts):
                    if isinstance(t, ast.Name):
                        self.set_global(t.id, v, stmt)

    def set_global(self, name, value_node, stmt):
        used = {n.id for n in ast.walk(value_node) if isinstance(n, ast.Name) and n.id in self.globals}
        try:
            value = self.constant(value_node)
        except Refused:
            value = None
        self.globals[name] = value
        self.global_line[name] = stmt.lineno
        if used:  # e.g. bias_shape = (out_features,): it must be computed again at each shape
            self.derived[name] = sorted(used)
        else:
            self.derived.pop(name, None)
        if isinstance(value, tuple):
            # A tuple of sizes (bias_shape = (out_features,)): its entries name the globals.
            self.globals[name] = tuple(self.atom_of(e) for e in value_node.elts) if isinstance(
                value_node, (ast.Tuple, ast.List)) else value

    def atom_of(self, node):
        if isinstance(node, ast.Name) and node.id in self.globals:
            return node.id
        v = self.constant(node)
        if isinstance(v, int) and not isinstance(v, bool):
            return v
        refuse(node, "a shape entry that is neither a global nor an integer")

    def constant(self, node):
        """The value of a constant expression over literals, module globals and math."""
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name) and node.id in self.globals:
            return self.globals[node.id]
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            v = self.constant(node.operand)
            if isinstance(v, (int, float)):
                return -v if isinstance(node.op, ast.USub) else v
        if isinstance(node, ast.BinOp):
            a, b = self.constant(node.left), self.constant(node.right)
            if isinstance(a, (int, float)) and isinstance(b, (int, float)):
                ops = {ast.Add: lambda: a + b, ast.Sub: lambda: a - b, ast.Mult: lambda: a * b,
                       ast.FloorDiv: lambda: a // b, ast.Div: lambda: a / b, ast.Pow: lambda: a ** b,
                       ast.Mod: lambda: a % b}
                if type(node.op) in ops:
                    return ops[type(node.op)]()
        if isinstance(node, (ast.Tuple, ast.List)):
            return tuple(self.constant(e) for e in node.elts)
        if isinstance(node, ast.Attribute) and dotted(node) in ("math.pi", "math.e"):
            return getattr(math, node.attr)
        if isinstance(node, ast.Call) and (dotted(node.func) or "").startswith("math.") and not node.keywords:
            args = [self.constant(a) for a in node.args]
            fn = getattr(math, node.func.attr, None)
            if fn and all(isinstance(a, (int, float)) for a in args):
                return fn(*args)
        refuse(node, "cannot evaluate '%s' without running the module" % ast.unparse(node)[:60])

    # ---- roles of the globals ----
    def mark(self, atom, role, node, why):
        if not isinstance(atom, str):
            return
        before = self.roles.get(atom)
        if before and before[0] != role:
            refuse(node, "global '%s' is used both as a size (%s) and as an axis (%s)" %
                   (atom, before[1] if before[0] == "size" else why, why if role == "axis" else before[1]))
        if atom in self.derived and role == "size":
            refuse(node, "size global '%s' is computed from %s: the spec's sizes are independent" %
                   (atom, ", ".join(self.derived[atom])))
        self.roles.setdefault(atom, (role, why + " (line %d)" % node.lineno))

    def shape_atoms(self, nodes, ctx, why, env=None):
        """The symbolic shape of constructor arguments: globals, integers, tuples or *tuple."""
        atoms = []
        for n in nodes:
            if isinstance(n, ast.Starred):
                n = n.value
            resolved = self.resolve(n, env)
            if isinstance(resolved, tuple):
                items = list(resolved)
            elif isinstance(n, (ast.Tuple, ast.List)):
                items = [self.atom_in(e, env) for e in n.elts]
            else:
                items = [resolved]
            for a in items:
                if isinstance(a, tuple):
                    items.extend(a)
                    continue
                if not (isinstance(a, str) or (isinstance(a, int) and a > 0)):
                    refuse(n, "a shape entry of %s that is not a size global or an integer: %s" %
                           (ctx if ctx != "input" else "an input", ast.unparse(n)[:60]))
                self.mark(a, "size", n, why)
                atoms.append(a)
        return atoms

    def atom_in(self, node, env):
        r = self.resolve(node, env)
        if isinstance(r, (str, int)) and not isinstance(r, bool):
            return r
        refuse(node, "a shape entry that is neither a global nor an integer: %s" % ast.unparse(node)[:60])

    def resolve(self, node, env):
        """A name in __init__ or get_inputs: a global's name (str), an int, a tuple of atoms, a Const."""
        if isinstance(node, ast.Name):
            if env is not None and node.id in env:
                return env[node.id]
            if node.id in self.globals:
                v = self.globals[node.id]
                if isinstance(v, int) and not isinstance(v, bool):
                    return node.id
                if isinstance(v, tuple):
                    return v
                return Const(v)
            refuse(node, "unknown name '%s'" % node.id)
        if isinstance(node, (ast.Tuple, ast.List)):
            return tuple(self.resolve(e, env) for e in node.elts)
        if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
            return node.value
        try:
            return Const(self.constant(node))
        except Refused:
            refuse(node, "cannot evaluate '%s' without running the module" % ast.unparse(node)[:60])

    # ---- get_inputs ----
    def read_inputs(self):
        fn = self.functions["get_inputs"]
        env = {}
        for stmt in fn.body:
            if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
                continue
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
                env[stmt.targets[0].id] = self.input_value(stmt.value, env)
            elif isinstance(stmt, ast.Return) and isinstance(stmt.value, (ast.List, ast.Tuple)):
                values = [self.input_value(e, env) for e in stmt.value.elts]
                return values
            else:
                refuse(stmt, "get_inputs does more than build tensors and return a list of them")
        refuse(fn, "get_inputs returns no list")

    def input_value(self, node, env):
        if isinstance(node, ast.Name) and node.id in env:
            return env[node.id]
        if isinstance(node, ast.Call):
            name = dotted(node.func) or ""
            if isinstance(node.func, ast.Attribute) and name.split(".")[-1] in ("float", "contiguous", "cuda") and \
                    not name.startswith("torch."):
                return self.input_value(node.func.value, env)
            short = name.split(".")[-1]
            for kw in node.keywords:
                if kw.arg == "dtype" and dotted(kw.value) not in ("torch.float32", "torch.float"):
                    refuse(node, "an input drawn as %s: the user type's inputs are fp32 or int64" %
                           ast.unparse(kw.value))
                if kw.arg not in ("dtype", "device", "requires_grad"):
                    refuse(node, "%s(%s=...) in get_inputs" % (name, kw.arg))
            if name in ("torch.rand", "torch.randn", "torch.ones", "torch.zeros", "torch.empty"):
                return Tensor(self.shape_atoms(node.args, "input", "shape of an input in get_inputs"))
            if name == "torch.randint":
                if len(node.args) == 2:
                    low, high, size = Const(0), node.args[0], node.args[1]
                elif len(node.args) == 3:
                    low, high, size = self.resolve(node.args[0], None), node.args[1], node.args[2]
                else:
                    refuse(node, "torch.randint with %d arguments" % len(node.args))
                t = Tensor(self.shape_atoms([size], "input", "shape of an input in get_inputs"), dtype="int64")
                t.low = low.value if isinstance(low, Const) else low
                h = self.resolve(high, None)
                t.high = h.value if isinstance(h, Const) else h
                return t
            if name in ("torch.tril", "torch.triu") and node.args:
                return self.input_value(node.args[0], env)
            refuse(node, "get_inputs builds an input with %s" % (name or ast.unparse(node.func)))
        if isinstance(node, ast.BinOp):
            a, b = self.input_value_or_const(node.left, env), self.input_value_or_const(node.right, env)
            # A 0-d tensor (torch.rand(()) as a random scale) broadcasts; other shapes must agree.
            ts = sorted((v for v in (a, b) if isinstance(v, Tensor)), key=lambda t: -len(t.shape))
            if ts and all(t.shape == ts[0].shape or not t.shape for t in ts):
                return Tensor(ts[0].shape, dtype=ts[0].dtype)
        if isinstance(node, ast.Attribute) and node.attr == "T":
            t = self.input_value(node.value, env)
            return Tensor(list(reversed(t.shape)), dtype=t.dtype)
        if isinstance(node, ast.Constant) or isinstance(node, ast.Name) and node.id in self.globals:
            refuse(node, "get_inputs returns a Python number (%s): a kernel takes tensors and sizes only" %
                   ast.unparse(node))
        refuse(node, "get_inputs builds an input as '%s'" % ast.unparse(node)[:60])

    def input_value_or_const(self, node, env):
        try:
            return Const(self.constant(node))
        except Refused:
            return self.input_value(node, env)

    # ---- Model.__init__ ----
    def read_init(self):
        init = next((s for s in self.model.body if isinstance(s, ast.FunctionDef) and s.name == "__init__"), None)
        fn = self.functions["get_init_inputs"]
        ret = next((s for s in fn.body if isinstance(s, ast.Return)), None)
        if ret is None or not isinstance(ret.value, (ast.List, ast.Tuple)) or \
                any(isinstance(s, (ast.Assign, ast.For, ast.If)) for s in fn.body):
            refuse(fn, "get_init_inputs does more than return a list")
        passed = ret.value.elts
        env = {}
        if init is None:
            if passed:
                refuse(fn, "get_init_inputs passes arguments to a Model without __init__")
            return
        params = init.args.args[1:]
        defaults = [None] * (len(params) - len(init.args.defaults)) + list(init.args.defaults)
        if len(passed) > len(params):
            refuse(fn, "get_init_inputs passes %d arguments to __init__, which takes %d" % (len(passed), len(params)))
        for i, p in enumerate(params):
            if i < len(passed):
                env[p.arg] = self.resolve(passed[i], None)
            elif defaults[i] is not None:
                env[p.arg] = self.resolve(defaults[i], None)
            else:
                refuse(init, "__init__'s argument '%s' gets no value from get_init_inputs" % p.arg)
        for stmt in init.body:
            self.read_init_statement(stmt, env)

    def read_init_statement(self, stmt, env):
        if isinstance(stmt, ast.Expr):
            if isinstance(stmt.value, ast.Constant):
                return
            call = stmt.value
            if isinstance(call, ast.Call) and "__init__" in ast.unparse(call.func):
                return
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            target = stmt.targets[0]
            if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self":
                self.attrs[target.attr] = self.init_value(stmt.value, env, target.attr)
                return
            if isinstance(target, ast.Name):
                env[target.id] = self.resolve(stmt.value, env)
                return
        refuse(stmt, "__init__ does '%s'" % ast.unparse(stmt)[:60])

    def init_value(self, node, env, attr):
        if not isinstance(node, ast.Call):
            return self.resolve(node, env)
        name = dotted(node.func) or ""
        short = name.split(".")[-1]
        bad = refused_construct(short)
        if bad:
            refuse(node, bad)
        args, kw = node.args, {k.arg: k.value for k in node.keywords}

        def arg(i, key, default=None):
            if i < len(args):
                return args[i]
            return kw.get(key, default)

        def flag(i, key, default):
            n = arg(i, key)
            if n is None:
                return default
            v = self.resolve(n, env)
            return bool(v.value) if isinstance(v, Const) else bool(v)

        if short == "Linear":
            fin, fout = arg(0, "in_features"), arg(1, "out_features")
            ins = self.shape_atoms([fin], "Linear", "nn.Linear's in_features", env)
            outs = self.shape_atoms([fout], "Linear", "nn.Linear's out_features", env)
            self.add_parameter(attr + ".weight", outs + ins, node)
            if flag(2, "bias", True):
                self.add_parameter(attr + ".bias", outs, node)
            return Layer("Linear", node, in_features=ins, out_features=outs, bias=flag(2, "bias", True))
        if short == "LayerNorm":
            shape = self.shape_atoms([arg(0, "normalized_shape")], "LayerNorm", "nn.LayerNorm's normalized_shape", env)
            affine = flag(2, "elementwise_affine", True)
            if affine:
                self.add_parameter(attr + ".weight", shape, node)
                if flag(3, "bias", True):
                    self.add_parameter(attr + ".bias", shape, node)
            return Layer("LayerNorm", node, shape=shape)
        if short in ("BatchNorm1d", "BatchNorm2d", "BatchNorm3d"):
            c = self.shape_atoms([arg(0, "num_features")], "BatchNorm", "BatchNorm's num_features", env)
            if flag(3, "affine", True):
                self.add_parameter(attr + ".weight", c, node)
                self.add_parameter(attr + ".bias", c, node)
            if flag(4, "track_running_stats", True):
                self.add_buffer(attr + ".running_mean", c, "float")
                self.add_buffer(attr + ".running_var", c, "float")
                self.add_buffer(attr + ".num_batches_tracked", [], "int64")
            return Layer("BatchNorm", node, channels=c)
        if short in ELEMENTWISE_MODULES:
            return Layer("elementwise", node, name=short)
        if short in ("Softmax", "LogSoftmax"):
            d = arg(0, "dim")
            return Layer("row", node, name=short, dim=self.axis_value(d, env) if d is not None else None)
        if name in ("nn.Parameter", "torch.nn.Parameter", "Parameter"):
            inner = args[0] if args else None
            if not (isinstance(inner, ast.Call) and (dotted(inner.func) or "") in (
                    "torch.randn", "torch.rand", "torch.ones", "torch.zeros", "torch.empty")):
                refuse(node, "a parameter that is not nn.Parameter(torch.randn(...))-style")
            shape = self.shape_atoms(inner.args, "parameter", "shape of nn.Parameter '%s'" % attr, env)
            self.add_parameter(attr, shape, node, own=True)
            return Tensor(shape, origin=("parameter", attr))
        refuse(node, "unrecognised layer %s" % (name or ast.unparse(node.func)))

    def axis_value(self, node, env):
        v = self.resolve(node, env)
        if isinstance(v, str):
            self.mark(v, "axis", node, "an axis (dim=) of a layer")
            return self.globals[v]
        if isinstance(v, int):
            return v
        if isinstance(v, Const) and isinstance(v.value, int):
            return v.value
        refuse(node, "an axis that is not an integer: %s" % ast.unparse(node)[:60])

    def add_parameter(self, name, shape, node, own=False):
        # named_parameters: the root module's own parameters first, then each submodule's in order.
        (self.own_parameters if own else self.sub_parameters).append({"name": name, "shape": shape, "type": "float"})

    def add_buffer(self, name, shape, dtype):
        self.sub_buffers.append({"name": name, "shape": shape, "type": dtype})

    # ---- forward ----
    def read_forward(self):
        fwd = next((s for s in self.model.body if isinstance(s, ast.FunctionDef) and s.name == "forward"), None)
        if fwd is None:
            refuse(self.model, "Model has no forward")
        names = [a.arg for a in fwd.args.args[1:]]
        if fwd.args.vararg or len(names) != len(self.inputs):
            refuse(fwd, "forward takes %d arguments and get_inputs returns %d" % (len(names), len(self.inputs)))
        env = {}
        for n, t in zip(names, self.inputs):
            t.name = n
            env[n] = Tensor(t.shape, origin=("input", n), dtype=t.dtype)
        for stmt in fwd.body:
            if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
                continue
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
                t = stmt.targets[0]
                v = self.ev(stmt.value, env)
                if isinstance(t, ast.Name):
                    env[t.id] = v
                elif isinstance(t, ast.Tuple) and isinstance(v, MaxTuple) and len(t.elts) == 2:
                    env[t.elts[0].id] = v.values
                    env[t.elts[1].id] = None  # indices: an int64 tensor nothing may use
                else:
                    refuse(stmt, "an assignment to '%s'" % ast.unparse(t))
            elif isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Name):
                env[stmt.target.id] = self.ev(ast.BinOp(stmt.target, stmt.op, stmt.value, lineno=stmt.lineno), env)
            elif isinstance(stmt, ast.Return):
                v = self.ev(stmt.value, env)
                if isinstance(v, MaxTuple) or isinstance(stmt.value, ast.Tuple):
                    refuse(stmt, "forward returns several tensors")
                if not isinstance(v, Tensor):
                    refuse(stmt, "forward returns no tensor")
                return v, stmt
            else:
                refuse(stmt, "%s in forward" % ("control flow" if isinstance(stmt, (ast.If, ast.For, ast.While))
                                                else "'%s'" % ast.unparse(stmt)[:50]))
        refuse(fwd, "forward returns nothing")

    def ev(self, node, env):
        if isinstance(node, ast.Name):
            if node.id in env:
                if env[node.id] is None:
                    refuse(node, "uses the indices of a max/min (an int64 tensor)")
                return env[node.id]
            if node.id in self.globals:
                return Const(self.globals[node.id])
            refuse(node, "unknown name '%s'" % node.id)
        if isinstance(node, ast.Constant):
            return Const(node.value)
        if isinstance(node, ast.Attribute):
            if isinstance(node.value, ast.Name) and node.value.id == "self":
                if node.attr not in self.attrs:
                    refuse(node, "self.%s is not set in __init__" % node.attr)
                v = self.attrs[node.attr]
                if isinstance(v, (str, int)) and not isinstance(v, bool):
                    return Const(self.globals[v] if isinstance(v, str) else v)
                return v
            if node.attr == "T":
                t = self.ev(node.value, env)
                return self.transpose(t, node)
            if node.attr == "values":
                v = self.ev(node.value, env)
                if isinstance(v, MaxTuple):
                    return v.values
            if node.attr in ("shape", "size"):
                refuse(node, "reads a tensor's shape")
            try:
                return Const(self.constant(node))
            except Refused:
                refuse(node, "unrecognised attribute '%s'" % ast.unparse(node)[:60])
        if isinstance(node, ast.UnaryOp):
            v = self.ev(node.operand, env)
            return self.elementwise([v], node)
        if isinstance(node, ast.BinOp):
            a, b = self.ev(node.left, env), self.ev(node.right, env)
            if isinstance(node.op, ast.MatMult):
                return self.matmul(a, b, node)
            return self.elementwise([a, b], node)
        if isinstance(node, ast.Subscript):
            v = self.ev(node.value, env)
            if isinstance(v, MaxTuple) and isinstance(node.slice, ast.Constant) and node.slice.value == 0:
                return v.values
            refuse(node, "indexing or slicing '%s'" % ast.unparse(node)[:60])
        if isinstance(node, ast.Call):
            return self.call(node, env)
        try:
            return Const(self.constant(node))
        except Refused:
            refuse(node, "unrecognised expression '%s'" % ast.unparse(node)[:60])

    def transpose(self, t, node):
        if not isinstance(t, Tensor) or len(t.shape) != 2 or t.origin is None:
            refuse(node, "a transpose of something other than a 2-D input or parameter")
        r = Tensor(list(reversed(t.shape)), origin=t.origin, dtype=t.dtype)
        r.transposed = not t.transposed
        return r

    def call(self, node, env):
        func = node.func
        args = node.args
        kw = {k.arg: k.value for k in node.keywords}
        # a method of a tensor: x.sum(dim=1), x.relu()
        if isinstance(func, ast.Attribute) and not (dotted(func) or "").split(".")[0] in ("torch", "F", "nn", "math", "self"):
            recv = self.ev(func.value, env)
            return self.op(func.attr, [recv] + [self.ev(a, env) for a in args], args, kw, node, env, method=True)
        name = dotted(func) or ""
        if name.startswith("self."):
            layer = self.attrs.get(name[5:])
            if not isinstance(layer, Layer):
                refuse(node, "calls %s, which is not a layer" % name)
            if len(args) != 1 or kw:
                refuse(node, "calls %s with %d arguments" % (name, len(args)))
            return self.apply_layer(layer, self.ev(args[0], env), node)
        if name.startswith("math."):
            return Const(self.constant(node))
        parts = name.split(".")
        if parts[0] not in ("torch", "F", "nn") or not name:
            refuse(node, "unrecognised call %s" % (name or ast.unparse(func)[:40]))
        short = parts[-1]
        if short == "dropout" and parts[-2] in ("F", "functional"):
            return self.ev(args[0], env)
        return self.op(short, [self.ev(a, env) for a in args], args, kw, node, env, method=False)

    def op(self, short, values, arg_nodes, kw, node, env, method):
        bad = refused_construct(short)
        if bad and short not in ("masked_fill",):
            refuse(node, bad)
        if short in ("matmul", "mm"):
            return self.matmul(values[0], values[1], node)
        if short == "t" and method:
            return self.transpose(values[0], node)
        if short == "linear" and len(values) >= 2:
            out = self.matmul(values[0], self.transpose(values[1], node), node)
            return self.elementwise([out, values[2]], node) if len(values) > 2 else out
        if short in ("max", "min") and len(values) >= 2 and isinstance(values[1], Tensor):
            return self.elementwise(values[:2], node)
        if short in REDUCTIONS:
            return self.reduction(short, values, arg_nodes, kw, node, env, method)
        if short in ROW_FUNCTIONS:
            position = 0 if method else 1
            axis_node = arg_nodes[position] if len(arg_nodes) > position else kw.get("dim")
            if axis_node is None:
                refuse(node, "%s without dim" % short)
            return self.row_op(values[0], self.axis_in_forward(axis_node, env), node, short)
        if short in ELEMENTWISE_FUNCTIONS or short in BINARY_FUNCTIONS:
            for k in kw:
                if k in ("dim", "out"):
                    refuse(node, "%s(%s=...)" % (short, k))
            tensors = values + [self.ev(v, env) for k, v in kw.items() if k not in ("inplace", "approximate",
                                                                                    "negative_slope", "min", "max",
                                                                                    "alpha", "beta", "threshold",
                                                                                    "lambd", "p", "training",
                                                                                    "exponent", "min_val", "max_val")]
            for k in ("min", "max"):
                if k in kw and isinstance(self.ev(kw[k], env), Tensor):
                    refuse(node, "%s with a tensor bound" % short)
            return self.elementwise(tensors, node)
        refuse(node, "unrecognised operation %s" % short)

    def axis_in_forward(self, node, env):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
            v = self.attrs.get(node.attr)
            if isinstance(v, str):
                self.mark(v, "axis", node, "an axis (dim=) in forward")
                return self.globals[v]
            if isinstance(v, int):
                return v
            if isinstance(v, Const) and isinstance(v.value, int):
                return v.value
            refuse(node, "an axis that is not an integer: %s" % ast.unparse(node))
        if isinstance(node, ast.Name) and node.id in self.globals:
            self.mark(node.id, "axis", node, "an axis (dim=) in forward")
            return self.globals[node.id]
        if isinstance(node, (ast.Tuple, ast.List)):
            refuse(node, "a reduction over several axes")
        v = self.constant(node)
        if not isinstance(v, int):
            refuse(node, "an axis that is not an integer: %s" % ast.unparse(node))
        return v

    def normal_axis(self, axis, t, node):
        rank = len(t.shape)
        if not -rank <= axis < rank:
            refuse(node, "axis %d of a %d-D tensor" % (axis, rank))
        return axis % rank

    def reduction(self, short, values, arg_nodes, kw, node, env, method):
        x = values[0]
        if not isinstance(x, Tensor):
            refuse(node, "%s of a number" % short)
        pos = arg_nodes[0:] if method else arg_nodes[1:]
        if short == "norm":
            p_node = kw.get("p", pos[0] if pos else None)
            p = self.constant(p_node) if p_node is not None else "fro"
            if p not in (1, 2, 2.0, 1.0):
                refuse(node, "a norm with p=%s" % p)
            pos = pos[1:]
        dim_node = kw.get("dim", kw.get("axis", pos[0] if pos else None))
        if dim_node is None:
            refuse(node, "%s over every element (a scalar output)" % short)
        keep_node = kw.get("keepdim", pos[1] if len(pos) > 1 else None)
        keepdim = bool(self.constant(keep_node)) if keep_node is not None else False
        axis = self.normal_axis(self.axis_in_forward(dim_node, env), x, node)
        shape = list(x.shape)
        if keepdim:
            shape[axis] = 1
        else:
            del shape[axis]
        self.events.append({"op": "reduce", "axis": axis, "keepdim": keepdim, "of": list(x.shape), "line": node.lineno})
        out = Tensor(shape)
        return MaxTuple(out) if short in ("max", "min") else out

    def row_op(self, x, axis, node, what):
        if not isinstance(x, Tensor):
            refuse(node, "%s of a number" % what)
        axis = self.normal_axis(axis, x, node)
        self.events.append({"op": "row", "axis": axis, "of": list(x.shape), "line": node.lineno})
        return Tensor(x.shape)

    def apply_layer(self, layer, x, node):
        if not isinstance(x, Tensor):
            refuse(node, "a layer applied to a number")
        if layer.kind == "Linear":
            w = Tensor(layer.config["out_features"] + layer.config["in_features"], origin=("parameter", "weight"))
            out = self.matmul(x, self.transpose(w, node), node)
            return out
        if layer.kind == "LayerNorm":
            shape = layer.config["shape"]
            if len(shape) != 1:
                refuse(node, "LayerNorm over %d trailing dimensions: the rows grid takes the last dimension as the row"
                       % len(shape))
            if not x.shape or x.shape[-1] != shape[0]:
                refuse(node, "LayerNorm's normalized_shape %s does not match the tensor's last dimension" % shape)
            return self.row_op(x, -1, node, "LayerNorm")
        if layer.kind == "BatchNorm":
            # Eval mode: a per-channel affine map over axis 1, elementwise with broadcast.
            if len(x.shape) < 2 or x.shape[1] != layer.config["channels"][0]:
                refuse(node, "BatchNorm's channels do not match axis 1 of its input")
            self.events.append({"op": "elementwise", "line": node.lineno})
            return Tensor(x.shape)
        if layer.kind == "elementwise":
            return self.elementwise([x], node)
        if layer.kind == "row":
            if layer.config["dim"] is None:
                refuse(node, "nn.%s without dim" % layer.config["name"])
            return self.row_op(x, layer.config["dim"], node, layer.config["name"])
        refuse(node, "unrecognised layer")

    def matmul(self, a, b, node):
        if not (isinstance(a, Tensor) and isinstance(b, Tensor)):
            refuse(node, "a matmul with a number")
        if len(a.shape) != 2 or len(b.shape) != 2:
            refuse(node, "a matmul of %d-D by %d-D tensors (batched or matrix-vector)" % (len(a.shape), len(b.shape)))
        if any(e["op"] == "gemm" for e in self.events):
            refuse(node, "a second GEMM")
        if a.origin is None or a.origin[0] != "input":
            refuse(node, "a GEMM whose left operand is computed (a prologue)")
        if b.origin is None:
            refuse(node, "a GEMM whose right operand is computed")
        if a.shape[1] != b.shape[0]:
            refuse(node, "a GEMM whose inner dimensions %s and %s differ" % (a.shape[1], b.shape[0]))
        self.events.append({"op": "gemm", "line": node.lineno, "right": b.origin[0],
                            "right_transposed": b.transposed})
        self.gemm = {"m": a.shape[0], "k": a.shape[1], "n": b.shape[1]}
        return Tensor([a.shape[0], b.shape[1]])

    def elementwise(self, values, node):
        tensors = [v for v in values if isinstance(v, Tensor)]
        for v in values:
            if isinstance(v, (Layer, MaxTuple)):
                refuse(node, "an operation on a layer or a (values, indices) pair")
        if not tensors:
            return Const()
        for t in tensors:
            if t.dtype != "float":
                refuse(node, "arithmetic on an int64 tensor")
        shape = tensors[0].shape
        for t in tensors[1:]:
            shape = self.broadcast(shape, t.shape, node)
        self.events.append({"op": "elementwise", "line": node.lineno})
        return Tensor(shape)

    def broadcast(self, a, b, node):
        n = max(len(a), len(b))
        a2, b2 = [1] * (n - len(a)) + list(a), [1] * (n - len(b)) + list(b)
        out = []
        for x, y in zip(a2, b2):
            if x == y or y == 1:
                out.append(x)
            elif x == 1:
                out.append(y)
            else:
                refuse(node, "cannot tell how shapes %s and %s broadcast" % (list(a), list(b)))
        return out

    # ---- the verdict ----
    def classify(self, out, ret):
        first = self.inputs[0].shape
        gemms = [e for e in self.events if e["op"] == "gemm"]
        reduces = [e for e in self.events if e["op"] == "reduce"]
        rows = [e for e in self.events if e["op"] == "row"]
        if gemms:
            if reduces or rows:
                e = (reduces + rows)[0]
                refuse(ast.Pass(lineno=e["line"]), "a reduction or row-wise op after a GEMM: its output is not "
                       "[batch, out_features] computed tile by tile")
            return "gemm_epilogue", "tiles"
        if out.shape == first:
            for e in reduces:
                if e["axis"] != len(first) - 1 or not e["keepdim"] or e["of"] != first:
                    refuse(ast.Pass(lineno=e["line"]), "a normalisation over axis %d, not the last one" % e["axis"])
            for e in rows:
                if e["axis"] != len(e["of"]) - 1 or e["of"] != first:
                    refuse(ast.Pass(lineno=e["line"]), "a row-wise op over axis %d, not the last one" % e["axis"])
            return ("rowwise", "rows") if reduces or rows else ("elementwise", "elements")
        if rows:
            refuse(ast.Pass(lineno=rows[0]["line"]), "a row-wise op and an output of another shape")
        if not reduces:
            refuse(ret, "an output of shape %s, not the first input's %s" % (out.shape, first))
        axes = {(e["axis"], e["keepdim"]) for e in reduces}
        if len(axes) != 1 or any(e["of"] != first for e in reduces):
            refuse(ast.Pass(lineno=reduces[-1]["line"]), "reductions over different axes or of different shapes")
        axis, keepdim = axes.pop()
        expected = list(first)
        if keepdim:
            expected[axis] = 1
        else:
            del expected[axis]
        if out.shape != expected:
            refuse(ret, "a reduction whose output %s is not its input with axis %d reduced" % (out.shape, axis))
        self.reduce_axis = axis
        return "reduction", "rows" if axis == len(first) - 1 else "elements"

    def analyse(self):
        self.own_parameters, self.sub_parameters, self.sub_buffers = [], [], []
        self.reduce_axis = None
        self.gemm = None
        self.read_module()
        self.inputs = self.read_inputs()
        for t in self.inputs:
            if not isinstance(t, Tensor):
                refuse(self.functions["get_inputs"], "get_inputs returns something other than tensors")
        self.read_init()
        self.parameters = self.own_parameters + self.sub_parameters
        self.buffers = self.sub_buffers
        out, ret = self.read_forward()
        self.kind, self.grid = self.classify(out, ret)
        self.output_shape = out.shape
        if self.inputs[0].dtype != "float":
            refuse(self.functions["get_inputs"], "the first input is an int64 tensor")


def summary_of(problem):
    """The first line of Model's docstring, or empty."""
    doc = ast.get_docstring(problem.model) if problem.model is not None else None
    lines = [l.strip() for l in (doc or "").splitlines() if l.strip()]
    return lines[0][:200] if lines else ""


def report(problem, refusal):
    ints = {k: v for k, v in problem.globals.items() if isinstance(v, int) and not isinstance(v, bool)}
    sizes = [k for k in problem.globals if k in ints and problem.roles.get(k, ("",))[0] == "size"]
    fixed = {k: v for k, v in problem.globals.items() if k not in sizes and isinstance(v, (int, float)) and
             not isinstance(v, bool)}
    out = {
        "file": problem.path,
        "accepted": refusal is None,
        "globals": {k: {"value": v, "role": "size" if k in sizes else "fixed",
                        "why": problem.roles.get(k, ("", "not used as a size"))[1],
                        "line": problem.global_line.get(k)}
                    for k, v in ints.items()},
        "sizes": sizes,
        "fixed": fixed,
        "derived": {k: v for k, v in problem.derived.items()},
        "summary": summary_of(problem),
    }
    out["inputs"] = []
    for i, t in enumerate(problem.inputs if isinstance(problem.inputs, list) else []):
        if not isinstance(t, Tensor):
            continue
        entry = {"name": getattr(t, "name", "input%d" % i), "shape": t.shape, "type": t.dtype}
        if t.dtype == "int64":
            entry["low"], entry["high"] = t.low, t.high
        out["inputs"].append(entry)
    out["parameters"] = [dict(p) for p in getattr(problem, "parameters", [])]
    out["buffers"] = [dict(b) for b in getattr(problem, "buffers", [])]
    if refusal is None:
        out["kind"], out["grid"] = problem.kind, problem.grid
        out["outputs"] = [{"name": "out", "shape": problem.output_shape, "type": "float"}]
        out["reduce_axis"] = problem.reduce_axis
        out["gemm"] = problem.gemm
    else:
        out["kind"], out["refused"] = "refused", refusal
    return out


def analyse_source(source, path):
    try:
        problem = Problem(source, path)
    except SyntaxError as e:
        return {"file": path, "accepted": False, "kind": "refused",
                "refused": "not valid Python: %s (line %s)" % (e.msg, e.lineno)}
    try:
        problem.analyse()
        return report(problem, None)
    except Refused as e:
        return report(problem, str(e))
    except RecursionError:
        return report(problem, "an expression nested too deeply")


def main(argv):
    if len(argv) != 2:
        sys.stderr.write("usage: python3 analyse_problem.py FILE.py\n")
        return 2
    try:
        with open(argv[1], encoding="utf-8") as f:
            source = f.read()
    except (OSError, UnicodeDecodeError) as e:
        sys.stderr.write("%s: cannot read: %s\n" % (argv[1], e))
        return 2
    print(json.dumps(analyse_source(source, argv[1]), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
