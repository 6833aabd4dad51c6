"""Which attributes a patch replaces, and putting them back. Pure Python over the namespaces it is
given (no torch import here), so that the logic is tested without a GPU: tests/export/patch_test.py.

Three kinds of target:
  functional  torch.nn.functional.rms_norm / layer_norm / softmax / cross_entropy, torch.softmax
  class       forward of a model's own norm classes (LlamaRMSNorm and its kin, *LayerNorm),
              rotary-embedding classes (*RotaryEmbedding: the cos and sin tables) and MLP classes
              (*MLP: the gate product of a gated one, LlamaMLP and its kin) defined in
              transformers' model modules or the program's __main__
  function    apply_rotary_pos_emb in those same modules
A class or function target replaces code the package has not seen: its replacement is checked
against the original on its first eager call and withdrawn if they disagree (_replacements.py)."""

FUNCTIONAL = (
    # (owner attribute path, attribute, kernel type)
    ("torch.nn.functional", "rms_norm", "rmsnorm"),
    ("torch.nn.functional", "layer_norm", "layernorm"),
    ("torch.nn.functional", "softmax", "softmax"),
    ("torch", "softmax", "softmax"),
    ("torch.nn.functional", "cross_entropy", "cross_entropy"),
    # The tensor-core types: each serves only the shapes its files were measured faster at.
    ("torch.nn.functional", "linear", "matmul"),
    ("torch.nn.functional", "scaled_dot_product_attention", "flash_attention"),
)
# A rotary-embedding class's forward makes the step's cos and sin tables: the rotary op's extension
# serves it (ops/rotary_tables.h) beside apply_rotary_pos_emb. The name of an MLP class does not say
# whether it is gated (GPT2MLP is not): its replacement finds out from the instance.
# A gated MLP is served by fused_mlp (the whole MLP in one launch, at its tuned shapes) and by swiglu
# (the gate product): one target of the first type exported, the other in its `also`.
CLASS_SUFFIXES = (("RMSNorm", "rmsnorm"), ("LayerNorm", "layernorm"), ("RotaryEmbedding", "rotary_embedding"),
                  ("MLP", "fused_mlp"), ("MLP", "swiglu"))
FUNCTIONS = (("apply_rotary_pos_emb", "rotary_embedding"),)


def model_modules(modules, also=()):
    """The modules whose classes and helpers may be patched: transformers' models, __main__, and
    those named in `also` (a model file loaded under a name of its own)."""
    for name, mod in sorted(modules.items()):
        if mod is not None and (name == "__main__" or name in also or name.startswith("transformers.models.")):
            yield name, mod


class Target:
    """One attribute to replace: owner.attr, which kernel type serves it, and of which kind."""

    def __init__(self, owner, owner_name, attr, type_, kind, also=()):
        self.owner, self.owner_name, self.attr, self.type, self.kind = owner, owner_name, attr, type_, kind
        self.also = tuple(also)  # other types whose ops the same replacement calls (a gated MLP's swiglu)

    @property
    def types(self):
        """Every type whose op this target's replacement may call, its own first."""
        return (self.type,) + self.also

    @property
    def name(self):
        return f"{self.owner_name}.{self.attr}"

    @property
    def op(self):
        """The op that stands in: the type's own, but for a rotary-embedding class's tables."""
        return "rotary_tables" if self.kind == "class" and self.type == "rotary_embedding" else self.type


def find_targets(modules, available, also=()):
    """Every target whose kernel type is in `available`, from the loaded `modules` (sys.modules)."""
    targets = []
    for owner_name, attr, type_ in FUNCTIONAL:
        owner = modules.get(owner_name)
        if type_ in available and owner is not None and callable(getattr(owner, attr, None)):
            targets.append(Target(owner, owner_name, attr, type_, "functional"))
    for mod_name, mod in model_modules(modules, also):
        for cls_name, cls in sorted(vars(mod).items()):
            if not isinstance(cls, type) or getattr(cls, "__module__", None) != mod_name:
                continue  # imported from elsewhere: patched where it is defined
            if "forward" not in vars(cls):
                continue
            types = [type_ for suffix, type_ in CLASS_SUFFIXES if type_ in available and cls_name.endswith(suffix)]
            if types:
                targets.append(Target(cls, f"{mod_name}.{cls_name}", "forward", types[0], "class", types[1:]))
        for fn_name, type_ in FUNCTIONS:
            if type_ in available and callable(vars(mod).get(fn_name)):
                targets.append(Target(mod, mod_name, fn_name, type_, "function"))
    return targets


class Patches:
    """Replaced attributes, restorable. A `with` block restores them at its end; `restore()` does
    it by hand. Patching what is already patched (by this package) is skipped, not stacked."""

    MARK = "_autokernel_original"

    def __init__(self):
        self.applied = []  # (target, original)

    def apply(self, targets, make_replacement):
        for t in targets:
            original = getattr(t.owner, t.attr)
            if hasattr(original, self.MARK):
                continue
            replacement = make_replacement(t, original)
            setattr(replacement, self.MARK, original)
            setattr(t.owner, t.attr, replacement)
            self.applied.append((t, original))
        return self

    def restore(self):
        for t, original in reversed(self.applied):
            setattr(t.owner, t.attr, original)
        self.applied = []

    @property
    def names(self):
        """What is patched, one line each: 'torch.nn.functional.rms_norm -> autokernel::rmsnorm'."""
        return [f"{t.name} -> autokernel::{t.op}" for t, _ in self.applied]

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.restore()
        return False
