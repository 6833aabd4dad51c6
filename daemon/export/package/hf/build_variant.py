"""Builds the variant of this kernel repository that the Hugging Face `kernels` library loads as it
is (get_local_kernel, kernelize), for this machine's PyTorch, CUDA and C++ ABI:

    build/<variant>/metadata.json             what the library reads: id, name, backend, digest
    build/<variant>/autokernel_ops/           the package: torch-ext/autokernel_ops/ as it is, with
        _ops.py                               the op namespace of this build (torch.ops.<namespace>)
        <namespace>.so                        the ops and launchers (torch-ext/ops/, autokernel_ops_cuda/)

    python3 build_variant.py --namespace _autokernel_<hex> [--repo DIR]   # autokernel export runs it
    python3 build_variant.py --variant-name                                # this machine's variant

<variant> is what the library looks for (kernels/variants.py): torch<major><minor>-cxx11-cu<major>
<minor>-<cpu>-<os>, e.g. torch211-cxx11-cu130-x86_64-linux. What is compiled is autokernel's own host
C++ (the ops and their launchers); the kernels are the modules NVRTC compiled at export, embedded as
bytes and handed to the CUDA driver at import. The machine needs PyTorch with CUDA, a C++ compiler,
ninja and the CUDA toolkit's headers (what torch.utils.cpp_extension needs); exit 3 says which is
missing, exit 1 that the build itself failed."""
import argparse
import base64
import hashlib
import json
import os
import platform
import re
import shutil
import sys
import tempfile

PACKAGE = "autokernel_ops"
KERNEL_NAME = "autokernel-ops"   # the library's KernelName: ^[a-z][-a-z0-9]*[a-z0-9]$; its python_name is PACKAGE
KERNELS_MINVER = "0.17.0"        # the library version whose rules this layout follows
MISSING = 3                      # exit status: the machine lacks what the build needs
NAMESPACE = re.compile(r"_autokernel_[0-9a-f]{16}")


def variant_name(torch_version, cuda_version, cxx11_abi, machine, system):
    """The build variant the `kernels` library accepts for this PyTorch (major.minor), CUDA
    (major.minor, from torch.version.cuda), C++ ABI (tagged on Linux only), CPU and OS."""
    major, minor = re.match(r"(\d+)\.(\d+)", torch_version).groups()
    cuda_major, cuda_minor = re.match(r"(\d+)\.(\d+)", cuda_version).groups()
    abi = ("-cxx11" if cxx11_abi else "-cxx98") if system == "linux" else ""
    cpu = {"AMD64": "x86_64", "arm64": "aarch64"}.get(machine, machine)
    return f"torch{major}{minor}{abi}-cu{cuda_major}{cuda_minor}-{cpu}-{system}"


def capability(arch):
    """The library's CUDA arch ("9.0a") for an NVRTC target ("sm_90a")."""
    m = re.fullmatch(r"(?:sm|compute)_(\d+)(\d)([af]?)", arch)
    return f"{m.group(1)}.{m.group(2)}{m.group(3)}" if m else arch


def digest(variant_dir):
    """{relative path: base64 sha256} of every file of the variant but metadata.json and bytecode:
    what the library's Digest.hash_variant computes and `kernels verify` compares."""
    files = {}
    for root, dirs, names in os.walk(variant_dir):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(names):
            path = os.path.join(root, name)
            rel = os.path.relpath(path, variant_dir).replace(os.sep, "/")
            if rel in ("metadata.json", "metadata.json.sigstore") or name.endswith(".pyc"):
                continue
            with open(path, "rb") as f:
                files[rel] = base64.b64encode(hashlib.sha256(f.read()).digest()).decode()
    return files


def metadata(namespace, archs, files):
    """metadata.json as the library parses it (kernels._rust.Metadata): the id is the op namespace,
    unique per build, under which the library also imports the package (sys.modules[id])."""
    return {"id": namespace, "name": KERNEL_NAME, "version": 1, "kernels-minver": KERNELS_MINVER,
            "license": "Apache-2.0", "python-depends": [],
            "backend": {"type": "cuda", "archs": sorted({capability(a) for a in archs})},
            "digest": {"algorithm": "sha256", "files": files}}


def ops_module(namespace, library):
    """_ops.py: kernel-builder's convention (ops, add_op_namespace_prefix) for a library that
    registers its ops under `namespace`."""
    return f'''"""The ops of this build, under a namespace of its own (two builds never collide)."""
import os

import torch

LIBRARY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "{library}")
NAMESPACE = "{namespace}"
torch.ops.load_library(LIBRARY)
ops = torch.ops.{namespace}


def add_op_namespace_prefix(op_name: str):
    return f"{namespace}::{{op_name}}"
'''


def missing(what, todo):
    print(f"build_variant.py: {what}: {todo}", file=sys.stderr)
    sys.exit(MISSING)


def toolchain():
    """torch and torch.utils.cpp_extension, after checking what the build needs; exits MISSING
    naming what is not there."""
    try:
        import torch
        from torch.utils import cpp_extension
    except Exception as e:  # ImportError, or a torch that fails to import
        missing(f"{sys.executable} cannot import PyTorch ({type(e).__name__}: {e})",
                "install PyTorch with CUDA (pip install torch), or give autokernel export --python PATH")
    if torch.version.cuda is None:
        missing(f"PyTorch {torch.__version__} is built without CUDA", "install a CUDA build of PyTorch")
    cxx = os.environ.get("CXX", "c++")
    if shutil.which(cxx) is None:
        missing(f"no C++ compiler ({cxx} is not on PATH)", "install g++ (apt-get install g++), or set CXX")
    if not cpp_extension.is_ninja_available():
        missing("ninja is not installed (torch.utils.cpp_extension builds with it)", "pip install ninja")
    cuda_home = cpp_extension.CUDA_HOME
    if not cuda_home or not os.path.isfile(os.path.join(cuda_home, "include", "cuda_runtime_api.h")):
        missing(f"no CUDA toolkit headers (CUDA_HOME: {cuda_home})",
                "install the CUDA toolkit matching PyTorch's CUDA " + torch.version.cuda + ", or set CUDA_HOME")
    return torch, cpp_extension


def this_variant(torch):
    return variant_name(torch.__version__, torch.version.cuda, torch.compiled_with_cxx11_abi(), platform.machine(),
                        platform.system().lower())


def build(repo, namespace, verbose, direct_calls=False):
    torch, cpp_extension = toolchain()
    py = os.path.join(repo, "torch-ext", PACKAGE)
    with open(os.path.join(py, "manifest.json")) as f:
        manifest = json.load(f)
    types = [op["type"] for op in manifest["ops"]]
    archs = [m["arch"] for op in manifest["ops"] for f in op.get("files") or [op] for m in f["modules"]]
    cuda_dir = os.path.join(repo, "autokernel_ops_cuda")
    sources = [os.path.join(repo, "torch-ext", "ops", f"{t}.cpp") for t in types] + \
              [os.path.join(cuda_dir, f"{t}_launch.cpp") for t in types]
    variant = this_variant(torch)
    # No .cu is compiled; torch's extension tooling still asks for CUDA architectures, from the GPU
    # when there is one: the modules' own, on an export machine without a GPU.
    os.environ.setdefault("TORCH_CUDA_ARCH_LIST", ";".join(sorted({re.sub(r"[af]$", "", capability(a)) for a in archs})))
    with tempfile.TemporaryDirectory(prefix="autokernel-hf-build-") as work:
        # TORCH_EXTENSION_NAME is the namespace: torch-ext/ops/ops_namespace.h registers the ops under it.
        # --direct-calls: each op also a function of a Python module of its own in the library
        # (ops/common.h), which the layers call in eager mode, a few microseconds a call less; it
        # ties the library to this Python (CPython symbols outside the stable ABI, which
        # kernel-abi-check refuses), so the default leaves it out.
        cflags = ["-O3"] + (["-DAK_HF_DIRECT_CALLS"] if direct_calls else [])
        cpp_extension.load(name=namespace, sources=sources, extra_cflags=cflags,  # the C++ standard: PyTorch's own
                           extra_ldflags=["-ldl"], extra_include_paths=[cuda_dir], with_cuda=True,
                           is_python_module=False, build_directory=work, verbose=verbose)
        library = namespace + ".so"
        target = os.path.join(repo, "build", variant)
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(py, os.path.join(target, PACKAGE), ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        shutil.copy2(os.path.join(work, library), os.path.join(target, PACKAGE, library))
    with open(os.path.join(target, PACKAGE, "_ops.py"), "w") as f:
        f.write(ops_module(namespace, library))
    with open(os.path.join(target, "metadata.json"), "w") as f:
        json.dump(metadata(namespace, archs, digest(target)), f, indent=2)
        f.write("\n")
    return target


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repo", default=os.path.dirname(os.path.abspath(__file__)), help="the kernel repository (default: here)")
    p.add_argument("--namespace", help="the op namespace of this build: _autokernel_ and 16 hex digits")
    p.add_argument("--variant-name", action="store_true", help="print this machine's variant and exit")
    p.add_argument("--verbose", action="store_true", help="show the compiler's output")
    p.add_argument("--direct-calls", action="store_true",
                   help="also build each op as a plain Python function that eager calls take without the dispatcher "
                        "(faster on a step the CPU issues; ties the build to this Python: not abi3)")
    a = p.parse_args()
    if a.variant_name:
        torch, _ = toolchain()
        print(this_variant(torch))
        return 0
    if a.namespace is None:
        # A rebuild by hand: a namespace of its own, so that it never collides with the export's.
        a.namespace = "_autokernel_" + os.urandom(8).hex()
    if not NAMESPACE.fullmatch(a.namespace):
        print(f"build_variant.py: --namespace {a.namespace}: expected _autokernel_ and 16 hex digits", file=sys.stderr)
        return 2
    try:
        target = build(os.path.abspath(a.repo), a.namespace, a.verbose, a.direct_calls)
    except Exception as e:  # the compiler's first errors; all of its output with --verbose
        text = str(e).strip() or type(e).__name__
        errors = [line for line in text.splitlines() if "error" in line][:8] or text.splitlines()[-8:]
        print("build_variant.py: the build failed:\n  " + "\n  ".join(errors), file=sys.stderr)
        return 1
    print(f"built {os.path.relpath(target, a.repo)} (ops under torch.ops.{a.namespace})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
