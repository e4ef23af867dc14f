#!/usr/bin/env python3
# Tests scripts/check-deps.py (ctest: check_deps_catches_violations): copies the repository's src/,
# include/, apps/, python/src/ and docs/layers.txt to a temporary directory, checks that the copy
# passes, then plants one violation at a time (an upward include, one between the two backends, a
# private header in an app, a file no layer claims, an include of nothing, a backward formula calling
# a kernel slot, a vendor header outside its layers or in a public header, a forward declaration of
# another layer's function or of a vendor's C function) and expects each to fail, naming the file,
# the line and the layers (or the vendor).
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
CHECKER = os.path.join(HERE, "check-deps.py")


def run(root):
    r = subprocess.run([sys.executable, CHECKER, "--root", root], capture_output=True, text=True)
    return r.returncode, r.stdout + r.stderr


def copy_tree(dst):
    for d in ("src", "include", "apps", os.path.join("python", "src")):
        shutil.copytree(os.path.join(ROOT, d), os.path.join(dst, d))
    os.makedirs(os.path.join(dst, "docs"))
    shutil.copy(os.path.join(ROOT, "docs", "layers.txt"), os.path.join(dst, "docs", "layers.txt"))


def append_line(path, line):
    with open(path, "a", encoding="utf-8") as f:
        f.write(line + "\n")


def line_count(path):
    with open(path, encoding="utf-8") as f:
        return sum(1 for _ in f)


# (description, file to plant in (created if missing), planted line, pieces the message must hold)
CASES = [
    ("core includes an ops header (up)", "src/core/dispatch.cpp", '#include "ops/autocast.h"',
     ["src/core/dispatch.cpp:", "layer 'core' includes src/ops/autocast.h of layer 'ops' (an upward include"]),
    ("core includes the backend registry (up)", "src/core/storage.cpp", '#include "backends/registry.h"',
     ["layer 'core' includes src/backends/registry.h of layer 'backends' (an upward include"]),
    ("an op front-end includes a backend header (skips the registry)", "src/ops/shape.cpp", '#include "cpu/register.h"',
     ["layer 'ops' includes src/cpu/register.h of layer 'cpu' ('cpu' is not in 'uses ops'"]),
    ("core includes the public ops header (up)", "src/core/tensor.cpp", '#include "ember/ops.h"',
     ["layer 'core' includes include/ember/ops.h of layer 'ops' (an upward include"]),
    ("the tape includes the engine (up)", "src/autograd/tape.cpp", '#include "ember/autograd/engine.h"',
     ["layer 'tape' includes include/ember/autograd/engine.h of layer 'autograd' (an upward include"]),
    ("a backend includes the data layer (up)", "src/cuda/check.cpp", '#include "ember/data/loader.h"',
     ["layer 'cuda' includes include/ember/data/loader.h of layer 'data' (an upward include"]),
    ("the CPU backend includes a CUDA header (sideways)", "src/cpu/gemm.cpp", '#include "cuda/check.h"',
     ["layer 'cpu' includes src/cuda/check.h of layer 'cuda'"]),
    ("an optimizer includes a kernel slot header (skips ops)", "src/optim/sgd.cpp",
     '#include "kernels/optim_kernels.h"', ["layer 'optim' includes src/kernels/optim_kernels.h of layer 'kernels' ('kernels' is not in 'uses optim'"]),
    ("an app includes a private header", "apps/ember/main.cpp", '#include "core/runtime.h"',
     ["apps/ember/main.cpp:", "private header src/core/runtime.h"]),
    ("a public header includes a private one", "include/ember/core/device.h", '#include "core/dispatch.h"',
     ["include/ember/core/device.h:", "private header src/core/dispatch.h"]),
    ("a file in a directory no layer claims", "src/newlayer/thing.cpp", '#include "ember/core/tensor.h"',
     ["src/newlayer/thing.cpp: no layer claims this file"]),
    ("a backward formula that indexes a kernel slot", "src/ops/nn_softmax.cpp",
     'auto bad = [](const Tensor& g) { return kernels::softmax_backward.has(g.device().type); };',
     ["src/ops/nn_softmax.cpp:", "a backward formula indexes a kernel slot"]),
    ("an include of a file that does not exist", "src/ops/shape.cpp", '#include "ops/no_such_header.h"',
     ['#include "ops/no_such_header.h" names no file']),
    # Vendor headers: only the layers docs/layers.txt lists for the vendor, never a public header.
    ("an op front-end includes oneDNN", "src/ops/autocast.cpp", "#include <oneapi/dnnl/dnnl.hpp>",
     ["layer 'ops' includes <oneapi/dnnl/dnnl.hpp> of vendor 'onednn', which only these layers may include: cpu"]),
    ("the doctor includes oneDNN's C header", "src/env/probe.cpp", "#include <dnnl.h>",
     ["layer 'env' includes <dnnl.h> of vendor 'onednn'"]),
    ("the doctor includes cblas", "src/env/probe.cpp", "#include <cblas.h>",
     ["layer 'env' includes <cblas.h> of vendor 'blas', which only these layers may include: cpu"]),
    ("the data layer includes a CUDA header", "src/data/loader.cpp", "#include <cuda_runtime_api.h>",
     ["layer 'data' includes <cuda_runtime_api.h> of vendor 'cuda', which only these layers may include: cuda, dist"]),
    ("the CPU backend includes cuDNN", "src/cpu/gemm.cpp", "#include <cudnn.h>",
     ["layer 'cpu' includes <cudnn.h> of vendor 'cuda'"]),
    ("train includes NCCL", "src/train/plan/planted.cpp", "#include <nccl.h>",
     ["layer 'train' includes <nccl.h> of vendor 'nccl', which only these layers may include: dist"]),
    ("the CLI includes nanobind", "apps/ember/main.cpp", "#include <nanobind/nanobind.h>",
     ["layer 'apps' includes <nanobind/nanobind.h> of vendor 'nanobind', which only these layers may include: python"]),
    ("a public header includes its own layer's vendor", "include/ember/dist/process_group.h", "#include <nccl.h>",
     ["include/ember/dist/process_group.h:", "the public header includes <nccl.h> of vendor 'nccl'"]),
    # Forward declarations: what an include would have shown, without the include.
    ("the ops layer forward-declares a backend's registration", "src/ops/shape.cpp",
     "namespace ember { namespace cpu { void register_kernels(); } }",
     ["layer 'ops' forward-declares ember::cpu::register_kernels, which src/cpu/register.h of layer 'cpu' declares"]),
    ("core forward-declares the registry (up)", "src/core/dtype.cpp", "namespace ember { void ensure_backends(); }",
     ["layer 'core' forward-declares ember::ensure_backends, which src/backends/registry.h of layer 'backends' declares"]),
    ("the tape forward-declares an op (up)", "src/autograd/tape.cpp",
     "namespace ember { Tensor add(const Tensor& a, const Tensor& b, double alpha); }",
     ["layer 'tape' forward-declares ember::add, which include/ember/ops.h of layer 'ops' declares"]),
    ("nn forward-declares a function in train's namespace", "src/nn/init.cpp",
     "namespace ember::train { int planted_helper(int steps); }",
     ["layer 'nn' forward-declares ember::train::planted_helper, in the namespace of layer 'train'"]),
    ("the doctor declares the CUDA runtime's own function", "src/env/probe.cpp",
     'extern "C" int cudaRuntimeGetVersion(int* version);',
     ["layer 'env' declares cudaRuntimeGetVersion(), a function of vendor 'cuda', which only these layers may use: cuda, dist"]),
    ("an op declares an OpenBLAS function", "src/ops/linalg.cpp", 'extern "C" int openblas_get_parallel(void);',
     ["layer 'ops' declares openblas_get_parallel(), a function of vendor 'blas'"]),
]


def main():
    failures = []
    with tempfile.TemporaryDirectory(prefix="ember-check-deps-") as tmp:
        clean = os.path.join(tmp, "clean")
        copy_tree(clean)
        rc, out = run(clean)
        if rc != 0:
            print(f"FAIL: the unmodified tree does not pass the check (rc {rc}):\n{out}")
            return 1
        print(f"ok: the unmodified tree passes ({out.strip()})")
        for i, (what, rel, line, pieces) in enumerate(CASES):
            root = os.path.join(tmp, f"case{i}")
            shutil.copytree(clean, root)
            path = os.path.join(root, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            append_line(path, line)
            rc, out = run(root)
            where = f"{rel}:{line_count(path)}"
            missing = [p for p in pieces if p not in out]
            if rc != 1 or missing or (not rel.startswith("src/newlayer") and where not in out):
                failures.append(f"{what}: rc {rc} (want 1), missing {missing or where!r} in:\n{out}")
            else:
                print(f"ok: {what}: {out.splitlines()[0]}")
    for f in failures:
        print(f"FAIL: {f}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
