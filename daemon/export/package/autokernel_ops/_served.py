"""Which calls the ops served, and by which file: for `autokernel verify`, per replaced function,
the share of its calls an op computed (rather than the original, in Python, or PyTorch's op inside
the op's C++, each of which a replacement falls back to for a call its kernel does not cover), and
for each of a type's exported files how many of those calls it served (the launcher picks a file by
the call's shape: file_pick.h).

Measured on fresh replacements made with an original that says when it runs: a replacement that
declines calls it. The op's own fallback (a call outside the kernel's contract, said once on
stderr) is seen in the type's launch counters (<type>_launches(), one count per file), read before
and after each call. A rotary-embedding class's tables launch no kernel of the run: their call is
served when it does not decline. An MLP class the replacement found not to be a gated MLP (its
first call tells: GPT-2's c_fc and c_proj; Phi-3's fused gate_up_proj where the exported swiglu
reads dense operands only, its contract's version 1) runs its own forward by design: its calls are
counted apart (not_its_form), not as calls the op declined."""


def launches_of(ops):
    """{type: () -> [launches of each file]} through the ops' <type>_launches()."""
    def launches(type_):
        return list(getattr(ops, f"{type_}_launches")())
    return launches


class Served:
    """One replaced function's calls: how many, how many an op served, and by which file."""

    def __init__(self, target):
        self.name, self.type, self.op = target.name, target.type, target.op
        self.calls = self.declined = self.fell_back = self.served = 0
        self.not_its_form = 0  # calls on an instance of a class the replacement found not of the op's form
        self.files = {}  # file index -> calls it served

    def row(self, tags):
        return {"name": self.name, "type": self.type, "op": self.op, "calls": self.calls, "served": self.served,
                "share": self.served / self.calls if self.calls else 0.0, "declined": self.declined,
                "op_fell_back": self.fell_back, "not_its_form": self.not_its_form,
                "files": {(tags(t, i) if t == self.type else f"{t}:{tags(t, i)}"): n
                          for (t, i), n in sorted(self.files.items())}}


def serving_wrapper(make, launches, rows, armed):
    """A wrapper for verify.wrapping(): in place of each installed replacement, a fresh one (make(target,
    original)) made with an original that marks its calls, counted into rows[target.name] while
    armed[0] is true (the first step checks the fresh replacements and is not counted)."""
    def wrap(target, current, original):
        row = rows.setdefault(target.name, Served(target))
        ran_original = []

        def marked_original(*args, **kwargs):
            ran_original.append(True)
            return original(*args, **kwargs)
        fresh = make(target, marked_original)
        counted = target.op == target.type  # the tables' op launches no file of the run
        types = getattr(target, "types", (target.type,))  # a gated MLP: fused_mlp's and swiglu's files

        def counts():
            return [(t, i, n) for t in types for i, n in enumerate(launches(t))]

        others = getattr(fresh, "other_classes", ())

        def call(*args, **kwargs):
            if not armed[0]:
                return fresh(*args, **kwargs)
            if args and type(args[0]) in others:  # an MLP class that is not gated (GPT-2's): not the op's call
                row.not_its_form += 1
                return fresh(*args, **kwargs)
            before = counts() if counted else None
            ran_original.clear()
            out = fresh(*args, **kwargs)
            row.calls += 1
            if ran_original:
                row.declined += 1
                return out
            if not counted:
                row.served += 1
                return out
            grew = [(t, i) for (t, i, a), (_, _, b) in zip(before, counts()) if b > a]
            if not grew:
                row.fell_back += 1
                return out
            row.served += 1
            for key in grew:
                row.files[key] = row.files.get(key, 0) + 1
            return out
        return call
    return wrap


def file_tags(manifest):
    """tags(type, index): the tag (else origin) of a type's index-th exported file, from manifest.json
    ("files" in exports that carry several files of a type; the op's own entry in older ones)."""
    by_type = {}
    for op in manifest.get("ops", []):
        files = op.get("files") or [op]
        by_type[op["type"]] = [f.get("tag") or f.get("origin") or f"file {i}" for i, f in enumerate(files)]

    def tags(type_, index):
        names = by_type.get(type_, [])
        return names[index] if index < len(names) else f"file {index}"
    return tags


def shares_by_type(rows):
    """{type: share of its calls served}, over every replaced function of the type that was called and
    that the type's kernel serves (a rotary class's tables, which the rotary extension makes without
    the run's kernel, are left out)."""
    totals = {}
    for r in rows:
        if r["op"] != r["type"]:  # a rotary class's tables: not the type's kernel
            continue
        calls, served = totals.get(r["type"], (0, 0))
        totals[r["type"]] = (calls + r["calls"], served + r["served"])
    return {t: served / calls for t, (calls, served) in totals.items() if calls}
