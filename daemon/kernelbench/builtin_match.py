# Whether a KernelBench problem computes one of the built-in types: both references, the problem's
# module and the type's (written here in PyTorch, as each kernels_cuda/<type>/<type>_type.cpp's CPU
# reference computes it), run on the CPU in float64 on random inputs at several of the problem's
# stage shapes, and compared. Never by names: a softmax over another axis, a scaled softmax or a
# sum that keeps another axis computes something else and is not matched.
#
# Prepended to analyse_problem.py when the analyser runs (one script on stdin): `torch`,
# `module_at` and `build_model` are that script's.

import itertools

# Two float64 computations of the same function differ by ~1e-15; an eps of 1e-5 where the type
# has 1e-6 moves a norm by ~4e-6. 1e-6 is 100 times tighter than KernelBench's fp32 tolerance.
MATCH_TOLERANCE = 1e-6
MATCH_SHAPES = 3  # the smoke shape and the first sweep shapes


def _softmax(x):
    return [torch.softmax(x, dim=-1)]


def _reduce(x):
    return [x.sum(dim=-1)]


def _rmsnorm(x, weight):
    return [x * torch.rsqrt((x * x).mean(dim=-1, keepdim=True) + 1e-6) * weight]


def _layernorm(x, weight, bias):
    return [torch.nn.functional.layer_norm(x, (x.shape[-1],), weight, bias, 1e-5)]


def _cross_entropy(logits, target):
    loss = torch.nn.functional.cross_entropy(logits, target, reduction="none")
    return [loss, loss.mean().reshape(1)]


def _swiglu(gate, up):
    return [torch.nn.functional.silu(gate) * up]


# type: (its arguments as (name, kind, size) with size "all" (the first argument's [rows, cols]),
# "cols" or "rows"; its outputs as (name, size); its reference over [rows, cols] views).
# matmul is matched apart (linear_mappings: three sizes); rotary_embedding, flash_attention and
# fused_mlp are not matched: docs/user-types.md says why.
BUILTIN_TYPES = {
    "softmax": ([("x", "float", "all")], [("y", "all")], _softmax),
    "reduce": ([("x", "float", "all")], [("y", "rows")], _reduce),
    "rmsnorm": ([("x", "float", "all"), ("weight", "float", "cols")], [("y", "all")], _rmsnorm),
    "layernorm": ([("x", "float", "all"), ("weight", "float", "cols"), ("bias", "float", "cols")], [("y", "all")],
                  _layernorm),
    "cross_entropy": ([("logits", "float", "all"), ("target", "int64", "rows")], [("loss", "rows"), ("mean", "one")],
                      _cross_entropy),
    "swiglu": ([("gate", "float", "all"), ("up", "float", "all")], [("y", "all")], _swiglu),
}


def _numel(shape):
    n = 1
    for s in shape:
        n *= s
    return n


def _size_of(size, rows, cols):
    return {"all": rows * cols, "rows": rows, "cols": cols, "one": 1}[size]


def _problem_tensors(run):
    """(role, name, type, shape) of the problem's arguments (inputs, parameters, buffers) and of its outputs."""
    args = [t for t in run.tensors if t[0] != "output"]
    outs = [t for t in run.tensors if t[0] == "output"]
    return args, outs


def candidate_mappings(run):
    """Every (type, cols axes, argument map, output map) that fits the problem's tensors at `run`'s
    shapes: each of the problem's arguments given to one of the type's, of its type and size, and
    each of its outputs to one of the type's outputs of its size. Values are not looked at here."""
    args, outs = _problem_tensors(run)
    found = []
    for type_name, (type_args, type_outs, _) in BUILTIN_TYPES.items():
        if len(type_args) != len(args) or len(outs) > len(type_outs):
            continue
        for order in itertools.permutations(range(len(args))):
            first = args[order[0]]
            rank = len(first[3])
            for k in range(1, rank + 1):
                cols = _numel(first[3][rank - k:])
                rows = _numel(first[3][:rank - k])
                if rows < 1 or cols < 1:
                    continue
                ok = all(args[order[i]][2] == kind and _numel(args[order[i]][3]) == _size_of(size, rows, cols)
                         for i, (_, kind, size) in enumerate(type_args))
                if not ok:
                    continue
                for out_order in itertools.permutations(range(len(type_outs)), len(outs)):
                    if all(outs[j][2] == "float" and _numel(outs[j][3]) == _size_of(type_outs[o][1], rows, cols)
                           for j, o in enumerate(out_order)):
                        found.append({"type": type_name, "cols_axes": k,
                                      "args": {type_args[i][0]: args[order[i]][1] for i in range(len(args))},
                                      "outputs": {type_outs[o][0]: outs[j][1] for j, o in enumerate(out_order)}})
    return found


def linear_mappings(run):
    """Every way the problem's tensors fit matmul's version 2, y = x W^T (+ bias) as nn.Linear
    computes it: x [..., K] (M the product of the rest), W [N, K], bias [N] where there is one,
    one output of M * N elements. Only where the registered matmul takes that contract
    (daemon/kernelbench/builtin_problem.cpp checks it); otherwise the problem stays a user type."""
    args, outs = _problem_tensors(run)
    if len(outs) != 1 or outs[0][2] != "float" or len(args) not in (2, 3) or any(t[2] != "float" for t in args):
        return []
    found = []
    for order in itertools.permutations(range(len(args))):
        x, w = args[order[0]], args[order[1]]
        if len(x[3]) < 2 or len(w[3]) != 2 or w[3][1] != x[3][-1]:
            continue
        k, n = x[3][-1], w[3][0]
        m = _numel(x[3]) // k
        if len(args) == 3 and list(args[order[2]][3]) != [n]:
            continue
        if _numel(outs[0][3]) != m * n:
            continue
        mapping = {"type": "matmul", "cols_axes": 1, "args": {"x": x[1], "w": w[1]}, "outputs": {"y": outs[0][1]}}
        if len(args) == 3:
            mapping["args"]["bias"] = args[order[2]][1]
        found.append(mapping)
    return found


def _linear_agrees(mapping, run, model, inputs, outputs):
    by_name = _tensors_by_name(run, model, inputs)
    x, w = by_name[mapping["args"]["x"]], by_name[mapping["args"]["w"]]
    y = x.reshape(-1, x.shape[-1]) @ w.t()
    if "bias" in mapping["args"]:
        y = y + by_name[mapping["args"]["bias"]]
    got = outputs[0]
    return got.numel() == y.numel() and got.is_floating_point() and torch.allclose(
        got.reshape(-1).double(), y.reshape(-1).double(), rtol=MATCH_TOLERANCE, atol=MATCH_TOLERANCE)


def _tensors_by_name(run, model, inputs):
    args, _ = _problem_tensors(run)
    by_name = {}
    input_names = [t[1] for t in args if t[0] == "input"]
    for name, x in zip(input_names, [x for x in inputs if isinstance(x, torch.Tensor)]):
        by_name[name] = x
    for name, p in model.named_parameters():
        by_name[name] = p.detach()
    return by_name


def _problem_at(source, path, overrides, seed):
    """The problem built on the CPU at `overrides`, in float64, its float inputs and parameters drawn
    from a normal distribution (signed: KernelBench's torch.rand would hide a relu), int64 inputs
    as get_inputs draws them: (model, inputs by name, outputs in order)."""
    namespace = module_at(source, path, overrides)
    torch.manual_seed(seed)
    model = build_model(namespace, "cpu").double()
    drawn = list(namespace["get_inputs"]())
    generator = torch.Generator().manual_seed(seed + 1)
    inputs = [torch.randn(x.shape, generator=generator, dtype=torch.float64) * 2
              if isinstance(x, torch.Tensor) and x.is_floating_point() else x for x in drawn]
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=generator, dtype=torch.float64))
        result = model(*inputs)
    outputs = list(result) if isinstance(result, (tuple, list)) else [result]
    return model, inputs, outputs


def _agrees(mapping, run, model, inputs, outputs):
    """Whether the type's reference, given the problem's tensors as `mapping` says, computes the
    problem's outputs within MATCH_TOLERANCE."""
    if mapping["type"] == "matmul":
        return _linear_agrees(mapping, run, model, inputs, outputs)
    _, outs = _problem_tensors(run)
    by_name = _tensors_by_name(run, model, inputs)
    type_args, type_outs, reference = BUILTIN_TYPES[mapping["type"]]
    first = by_name[mapping["args"][type_args[0][0]]]
    k = mapping["cols_axes"]
    cols = _numel(first.shape[first.dim() - k:])
    rows = first.numel() // cols
    views = []
    for name, kind, size in type_args:
        t = by_name[mapping["args"][name]]
        views.append(t.reshape(rows, cols) if size == "all" else t.reshape(-1))
    expected = dict(zip([n for n, _ in type_outs], reference(*views)))
    out_names = [t[1] for t in outs]
    for type_out, problem_out in mapping["outputs"].items():
        got = outputs[out_names.index(problem_out)]
        want = expected[type_out]
        if got.numel() != want.numel() or not got.is_floating_point():
            return False
        if not torch.allclose(got.reshape(-1).double(), want.reshape(-1).double(), rtol=MATCH_TOLERANCE,
                              atol=MATCH_TOLERANCE):
            return False
    return True


def match_builtin(analysis):
    """The built-in type the problem computes, as {"type", "cols_axes", "args", "outputs", "shape"}
    (shape: [rows, cols] at the module's own sizes; swiglu's [rows, cols, cols]), or None with the reason in a second value."""
    base = analysis.base
    if any(t[0] == "buffer" for t in base.tensors):
        return None, "it has buffers, which no built-in type takes"
    if base.constants:
        return None, "get_inputs() returns numbers, which no built-in type takes"
    candidates = candidate_mappings(base) + linear_mappings(base)
    if not candidates:
        return None, "its tensors fit no built-in type's arguments"
    shapes = ([analysis.stages["smoke"]] + analysis.stages["sweep"])[:MATCH_SHAPES] if analysis.dims else [[]]
    for seed, values in enumerate(shapes):
        overrides = dict(zip(analysis.dims, values))
        try:
            model, inputs, outputs = _problem_at(analysis.source, analysis.path, overrides, 1000 + seed)
        except Exception as e:  # the problem does not run in float64 on the CPU: no match decided
            return None, "it does not run in float64 on the CPU (%s)" % type(e).__name__
        try:
            run = run_problem(analysis.source, analysis.path, overrides, "meta", record_ops=False)
        except Exception:
            run = run_problem(analysis.source, analysis.path, overrides, "cpu", record_ops=False)
        fitting = candidate_mappings(run) + linear_mappings(run)
        candidates = [m for m in candidates if m in fitting and _agrees(m, run, model, inputs, outputs)]
        if not candidates:
            return None, "no built-in type's reference computes its outputs"
    chosen = dict(candidates[0])
    args, _ = _problem_tensors(base)
    shape_of = {t[1]: t[3] for t in args}
    if chosen["type"] == "matmul":
        x, w = shape_of[chosen["args"]["x"]], shape_of[chosen["args"]["w"]]
        chosen["shape"] = [_numel(x) // x[-1], w[0], x[-1], 1 if "bias" in chosen["args"] else 0]
    else:
        first = shape_of[chosen["args"][BUILTIN_TYPES[chosen["type"]][0][0][0]]]
        k = chosen["cols_axes"]
        chosen["shape"] = [_numel(first[:len(first) - k]), _numel(first[len(first) - k:])]
        if chosen["type"] == "swiglu":  # its contract's row stride (version 2): a problem's operands are dense
            chosen["shape"].append(chosen["shape"][1])
    chosen["shapes_compared"] = shapes
    return chosen, None
