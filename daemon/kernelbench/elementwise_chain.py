# A problem whose forward is a chain of elementwise ops over tensors of its output's shape, read as
# a list of steps (the IR daemon/kernelbench/elementwise_starter.cpp writes a first kernel file
# from): the aten ops the forward runs on the CPU, recorded by a dispatch mode, each normalised to
# one of CHAIN_OPS with its numbers. The steps are then run again in PyTorch on fresh inputs and
# compared with the module, so a chain that missed an op is never written.
#
# Prepended to analyse_problem.py when the analyser runs: `torch`, `module_at`, `build_model` and
# `Refused` are that script's.

# The ops a step may be, with the numbers each takes after its operands.
CHAIN_OPS = {
    "neg": 1, "abs": 1, "exp": 1, "log": 1, "log1p": 1, "expm1": 1, "sqrt": 1, "rsqrt": 1, "sigmoid": 1,
    "tanh": 1, "relu": 1, "erf": 1, "sin": 1, "cos": 1, "reciprocal": 1, "silu": 1, "mish": 1,
    "hardsigmoid": 1, "hardswish": 1, "gelu_erf": 1, "gelu_tanh": 1,
    "add": 2, "sub": 2, "mul": 2, "div": 2, "maximum": 2, "minimum": 2, "pow": 2,
    "leaky_relu": 2, "elu": 4, "softplus": 3, "clamp": 3, "threshold": 3,
}

# Ops that give back their operand's elements in the same order (contiguous views and copies).
SAME_ELEMENTS = {"view", "_unsafe_view", "reshape", "flatten", "clone", "contiguous", "alias", "detach",
                 "lift_fresh", "lift_fresh_copy", "_to_copy", "squeeze", "unsqueeze", "copy"}
CONSTANT_LIKE = {"zeros_like": 0.0, "ones_like": 1.0}
CHAIN_SHAPES = 2
CHAIN_TOLERANCE = 1e-9   # float64 both sides: only a different function differs by more

_SAME_AS_ATEN = {"neg", "abs", "exp", "log", "log1p", "expm1", "sqrt", "rsqrt", "sigmoid", "tanh", "relu", "erf", "sin",
                 "cos", "reciprocal", "silu", "mish", "hardsigmoid", "hardswish", "maximum", "minimum"}


class NotAChain(Exception):
    pass


def _bound(func, args, kwargs):
    """The op's arguments by their schema names, defaults filled in."""
    out = {}
    schema = func._schema.arguments
    for i, a in enumerate(schema):
        if i < len(args):
            out[a.name] = args[i]
        elif kwargs and a.name in kwargs:
            out[a.name] = kwargs[a.name]
        elif a.has_default_value():
            out[a.name] = a.default_value
    return out


class ChainRecorder:
    """Turns the recorded aten ops into steps: operands are {"v": value} (the inputs are values
    0..n-1, step i is value n+i) or {"n": number}."""

    def __init__(self, inputs, numel):
        self.numel = numel
        self.values = {id(x): i for i, x in enumerate(inputs)}
        self.keep = list(inputs)   # ids stay unique while the tensors live
        self.count = len(inputs)
        self.steps = []

    def operand(self, a):
        if isinstance(a, bool):
            raise NotAChain("a boolean operand")
        if isinstance(a, (int, float)):
            return {"n": float(a)}
        if isinstance(a, torch.Tensor):
            if id(a) in self.values:
                if a.numel() != self.numel:
                    raise NotAChain("a tensor of %d elements beside the output's %d (broadcast)" % (a.numel(), self.numel))
                return {"v": self.values[id(a)]}
            if a.numel() == 1 and a.is_floating_point():
                return {"n": float(a.item())}
            raise NotAChain("a tensor that comes from no input")
        raise NotAChain("an operand of type %s" % type(a).__name__)

    def number(self, a):
        if a is None:
            return None
        if isinstance(a, torch.Tensor) and a.numel() == 1:
            return float(a.item())
        if isinstance(a, (int, float)) and not isinstance(a, bool):
            return float(a)
        raise NotAChain("a number argument of type %s" % type(a).__name__)

    def emit(self, op, operands, numbers, result):
        self.steps.append({"op": op, "args": operands + [{"n": n} if n is not None else {"none": True} for n in numbers]})
        self.values[id(result)] = self.count
        self.keep.append(result)
        self.count += 1

    def record(self, func, args, kwargs, result):
        name = func.overloadpacket.__name__
        inplace = name.endswith("_") and not name.startswith("_")
        base = name[:-1] if inplace else name
        if isinstance(result, (tuple, list)) or not isinstance(result, torch.Tensor):
            raise NotAChain("aten.%s returns no single tensor" % name)
        if not result.is_floating_point():
            raise NotAChain("aten.%s gives a %s tensor" % (name, result.dtype))
        if result.numel() != self.numel:
            raise NotAChain("aten.%s gives %d elements, the output has %d" % (name, result.numel(), self.numel))
        b = _bound(func, args, kwargs)
        first = args[0] if args else None
        if base in CONSTANT_LIKE or (base == "full_like"):
            value = CONSTANT_LIKE.get(base, None)
            if value is None:
                value = self.number(b.get("fill_value"))
            self.emit("add", [{"n": value}, {"n": 0.0}], [], result)
            return
        if base in SAME_ELEMENTS:
            if base == "copy":
                first = args[1]
            if not isinstance(first, torch.Tensor) or id(first) not in self.values:
                raise NotAChain("aten.%s of a tensor that comes from no input" % name)
            if first.dim() > 0 and not first.is_contiguous() and base not in ("clone", "contiguous", "_to_copy"):
                raise NotAChain("aten.%s of a non-contiguous tensor" % name)
            self.values[id(result)] = self.values[id(first)]
            self.keep.append(result)
            return
        x = lambda key: self.operand(b[key])
        if base in _SAME_AS_ATEN:
            operands = [x("self")] + ([x("other")] if base in ("maximum", "minimum") else [])
            self.emit(base, operands, [], result)
        elif base in ("add", "sub", "rsub"):
            alpha = self.number(b.get("alpha", 1))
            a, o = x("self"), x("other")
            if base == "rsub":
                a, o = o, a
                if alpha != 1:
                    raise NotAChain("aten.rsub with alpha")
            if alpha != 1:
                self.emit("mul", [o, {"n": alpha}], [], torch.empty(0))
                o = {"v": self.count - 1}
            self.emit("sub" if base in ("sub", "rsub") else "add", [a, o], [], result)
        elif base in ("mul", "div"):
            if base == "div" and b.get("rounding_mode") is not None:
                raise NotAChain("aten.div with rounding_mode %s" % b.get("rounding_mode"))
            self.emit(base, [x("self"), x("other")], [], result)
        elif base == "pow":
            base_operand = self.operand(b["self"]) if "self" in b else {"n": self.number(b["self"])}
            self.emit("pow", [base_operand, x("exponent")], [], result)
        elif base == "gelu":
            self.emit("gelu_tanh" if b.get("approximate") == "tanh" else "gelu_erf", [x("self")], [], result)
        elif base == "leaky_relu":
            self.emit("leaky_relu", [x("self")], [self.number(b.get("negative_slope", 0.01))], result)
        elif base == "elu":
            self.emit("elu", [x("self")], [self.number(b.get(k, 1)) for k in ("alpha", "scale", "input_scale")], result)
        elif base == "celu":
            alpha = self.number(b.get("alpha", 1))
            self.emit("elu", [x("self")], [alpha, 1.0, 1.0 / alpha], result)
        elif base == "softplus":
            self.emit("softplus", [x("self")], [self.number(b.get("beta", 1)), self.number(b.get("threshold", 20))], result)
        elif base in ("hardtanh", "clamp", "clamp_min", "clamp_max"):
            lo = b.get("min_val", -1) if base == "hardtanh" else b.get("min")
            hi = b.get("max_val", 1) if base == "hardtanh" else b.get("max")
            if base == "clamp_max":
                lo, hi = None, b.get("max")
            if isinstance(lo, torch.Tensor) and lo.numel() != 1 or isinstance(hi, torch.Tensor) and hi.numel() != 1:
                raise NotAChain("aten.%s with tensor bounds" % name)
            self.emit("clamp", [x("self")], [self.number(lo), self.number(hi)], result)
        elif base == "threshold":
            self.emit("threshold", [x("self")], [self.number(b["threshold"]), self.number(b["value"])], result)
        else:
            raise NotAChain("aten.%s is not an elementwise op the generator knows" % name)


def chain_value(step, operands):
    """What a step computes, in PyTorch (float64): the steps' meaning, against which the module is compared."""
    op = step["op"]
    F = torch.nn.functional
    numbers = [a.get("n") for a in step["args"][CHAIN_OPS_OPERANDS[op]:]]
    x = operands[0]
    if op == "gelu_erf":
        return F.gelu(x)
    if op == "gelu_tanh":
        return F.gelu(x, approximate="tanh")
    if op in ("add", "sub", "mul", "div", "maximum", "minimum", "pow"):
        a, b = operands
        fn = {"add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div, "maximum": torch.maximum,
              "minimum": torch.minimum, "pow": torch.pow}[op]
        if not isinstance(a, torch.Tensor):
            a = torch.tensor(a, dtype=torch.float64)
        if not isinstance(b, torch.Tensor):
            b = torch.tensor(b, dtype=torch.float64)
        return fn(a, b)
    if op == "leaky_relu":
        return F.leaky_relu(x, numbers[0])
    if op == "elu":
        alpha, scale, input_scale = numbers
        return torch.where(x > 0, x * scale, torch.expm1(x * input_scale) * alpha * scale)
    if op == "softplus":
        return F.softplus(x, numbers[0], numbers[1])
    if op == "clamp":
        return torch.clamp(x, numbers[0], numbers[1])
    if op == "threshold":
        return F.threshold(x, numbers[0], numbers[1])
    return getattr(torch, op)(x) if hasattr(torch, op) else getattr(F, op)(x)


# How many of a step's args are operands (values or numbers); the rest are the op's own numbers.
CHAIN_OPS_OPERANDS = {op: (2 if op in ("add", "sub", "mul", "div", "maximum", "minimum", "pow") else 1) for op in CHAIN_OPS}


def evaluate_chain(chain, inputs):
    values = list(inputs)
    for step in chain["steps"]:
        operands = [values[a["v"]] if "v" in a else a["n"] for a in step["args"][:CHAIN_OPS_OPERANDS[step["op"]]]]
        if not isinstance(operands[0], torch.Tensor) and CHAIN_OPS_OPERANDS[step["op"]] == 1:
            operands[0] = torch.tensor(operands[0], dtype=torch.float64)
        values.append(chain_value(step, operands))
    out = values[chain["output"]]
    return out if isinstance(out, torch.Tensor) else torch.tensor(out, dtype=torch.float64)


def trace_chain(source, path, overrides):
    """The steps of the forward at `overrides`, on the CPU in float32."""
    from torch.utils._python_dispatch import TorchDispatchMode

    namespace = module_at(source, path, overrides)
    torch.manual_seed(0)
    model = build_model(namespace, "cpu")
    inputs = list(namespace["get_inputs"]())
    tensors = [x for x in inputs if isinstance(x, torch.Tensor)]
    with torch.no_grad():
        numel = model(*inputs).numel()
    recorder = ChainRecorder(tensors, numel)

    class Mode(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            result = func(*args, **(kwargs or {}))
            recorder.record(func, args, kwargs, result)
            return result

    with torch.no_grad(), Mode():
        result = model(*inputs)
    if not isinstance(result, torch.Tensor) or id(result) not in recorder.values:
        raise NotAChain("the output comes from no input")
    return {"steps": recorder.steps, "output": recorder.values[id(result)], "inputs": len(tensors)}


def elementwise_chain(analysis):
    """The forward as steps over its inputs ({"steps", "output", "inputs"}), or None with the reason."""
    base = analysis.base
    args = [t for t in base.tensors if t[0] != "output"]
    outs = [t for t in base.tensors if t[0] == "output"]
    if analysis.kind != "elementwise":
        return None, "its kind is %s, not elementwise" % analysis.kind
    if len(outs) != 1 or outs[0][2] != "float":
        return None, "it has %d outputs (one float output needed)" % len(outs)
    if any(t[0] != "input" or t[2] != "float" for t in args):
        return None, "it takes parameters, buffers or int64 inputs"
    if any(_numel_of(t[3]) != _numel_of(outs[0][3]) for t in args):
        return None, "an input's size differs from the output's (a broadcast)"
    shapes = ([analysis.stages["smoke"]] + analysis.stages["sweep"])[:CHAIN_SHAPES] if analysis.dims else [[]]
    chain = None
    for seed, values in enumerate(shapes):
        overrides = dict(zip(analysis.dims, values))
        try:
            traced = trace_chain(analysis.source, analysis.path, overrides)
        except NotAChain as e:
            return None, str(e)
        except Exception as e:
            return None, "it does not run on the CPU (%s)" % type(e).__name__
        if chain is not None and traced != chain:
            return None, "its ops change with its sizes"
        chain = traced
        namespace = module_at(analysis.source, analysis.path, overrides)
        torch.manual_seed(seed)
        model = build_model(namespace, "cpu").double()
        drawn = list(namespace["get_inputs"]())
        generator = torch.Generator().manual_seed(2000 + seed)
        fresh = [torch.randn(x.shape, generator=generator, dtype=torch.float64) * 3 if isinstance(x, torch.Tensor) else x
                 for x in drawn]
        with torch.no_grad():
            want = model(*fresh)
            got = evaluate_chain(chain, [x for x in fresh if isinstance(x, torch.Tensor)])
        if got.numel() != want.numel() or not torch.allclose(got.reshape(-1), want.reshape(-1).double(),
                                                              rtol=CHAIN_TOLERANCE, atol=CHAIN_TOLERANCE, equal_nan=True):
            return None, "its recorded ops do not compute its output (an op the recording missed)"
    return chain, None


def _numel_of(shape):
    n = 1
    for s in shape:
        n *= s
    return n
