#!/usr/bin/env python3
# Keeps ember's dependencies pointing down: reads every #include "..." in src/, include/ and apps/,
# maps the including and the included file to their layers (docs/layers.txt) and fails on an edge
# that file does not allow, on a public header or app that includes a private header, on a file no
# layer claims, and on a backward formula in src/ops that indexes a kernel slot itself instead of
# calling an op front-end. Run by ctest (test check_deps); docs/architecture.md explains the rules.
#   scripts/check-deps.py [--root DIR] [--layers FILE]
import argparse
import os
import re
import sys

SOURCE_DIRS = ("src", "include", "apps")
SOURCE_EXTS = (".h", ".hpp", ".cpp", ".cc", ".cu", ".cuh")
INCLUDE_RE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')
# The gradient lambda of a backward node: [captures](const std::vector<Tensor>& g) { ... } or
# [captures](const Tensor& g) { ... } (the views' and unary ops' form).
BACKWARD_LAMBDA_RE = re.compile(r'\[[^\]]*\]\s*\(\s*const\s+(?:std::vector<Tensor>|Tensor)\s*&\s*g\s*\)\s*\{')


class LayersError(Exception):
    pass


def read_layers(path):
    """Returns (order, paths, allowed, public_only) from the layers file."""
    order, paths, allowed, public_only = [], [], {}, []
    with open(path, encoding="utf-8") as f:
        for lineno, raw in enumerate(f, 1):
            line = raw.split("#", 1)[0].strip()
            if not line:
                continue
            words = line.split()
            where = f"{path}:{lineno}"
            if words[0] == "layer" and len(words) >= 3:
                name = words[1]
                if name in allowed:
                    raise LayersError(f"{where}: layer '{name}' declared twice")
                order.append(name)
                allowed[name] = set()
                paths.extend((p.rstrip("/"), name) for p in words[2:])
            elif words[0] == "uses" and len(words) >= 3:
                name = words[1]
                if name not in allowed:
                    raise LayersError(f"{where}: 'uses {name}' before 'layer {name}'")
                for dep in words[2:]:
                    if dep not in allowed:
                        raise LayersError(f"{where}: layer '{name}' uses unknown layer '{dep}' "
                                          "(declare a layer before the layers above it use it)")
                    allowed[name].add(dep)
            elif words[0] == "public-only" and len(words) >= 2:
                public_only.extend(p.rstrip("/") for p in words[1:])
            else:
                raise LayersError(f"{where}: expected 'layer NAME PATH...', 'uses NAME LAYER...' or "
                                  f"'public-only PATH...', got: {line}")
    # Longest prefix first, so a file listed on its own wins over its directory.
    paths.sort(key=lambda p: -len(p[0]))
    return order, paths, allowed, public_only


def under(rel, prefix):
    return rel == prefix or rel.startswith(prefix + "/")


def layer_of(rel, paths):
    for prefix, name in paths:
        if under(rel, prefix):
            return name
    return None


def resolve(root, including, target):
    """The repository-relative path an #include "target" in `including` reaches, or None."""
    candidates = [os.path.join(os.path.dirname(including), target),  # next to the file (apps, tests)
                  os.path.join("include", target),                 # public: "ember/..."
                  os.path.join("src", target)]                      # private: "core/...", "cpu/..."
    for c in candidates:
        c = os.path.normpath(c)
        if os.path.isfile(os.path.join(root, c)):
            return c
    return None


def source_files(root):
    for top in SOURCE_DIRS:
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, top)):
            dirnames.sort()
            for name in sorted(filenames):
                if name.endswith(SOURCE_EXTS):
                    yield os.path.relpath(os.path.join(dirpath, name), root)


def backward_rule_errors(root):
    """Backward lambdas in src/ops that name a kernel slot (kernels::...) directly."""
    errors = []
    ops_dir = os.path.join(root, "src", "ops")
    if not os.path.isdir(ops_dir):
        return errors
    for name in sorted(os.listdir(ops_dir)):
        if not name.endswith(".cpp"):
            continue
        rel = os.path.join("src", "ops", name)
        with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
            text = f.read()
        for m in BACKWARD_LAMBDA_RE.finditer(text):
            i, depth = m.end(), 1
            while depth and i < len(text):
                depth += {"{": 1, "}": -1}.get(text[i], 0)
                i += 1
            body = text[m.end():i]
            k = body.find("kernels::")
            if k >= 0:
                line = text.count("\n", 0, m.end() + k) + 1
                errors.append(f"{rel}:{line}: a backward formula indexes a kernel slot; call an op front-end "
                              "(a named backward front-end in this file allocates and dispatches), see "
                              "docs/architecture.md")
    return errors


def check(root, layers_path):
    order, paths, allowed, public_only = read_layers(layers_path)
    errors, edges = [], 0
    for rel in source_files(root):
        src_layer = layer_of(rel, paths)
        if src_layer is None:
            errors.append(f"{rel}: no layer claims this file; add its directory to {layers_path}")
            continue
        with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
            for lineno, line in enumerate(f, 1):
                m = INCLUDE_RE.match(line)
                if not m:
                    continue
                target = resolve(root, rel, m.group(1))
                where = f"{rel}:{lineno}"
                if target is None:
                    errors.append(f"{where}: #include \"{m.group(1)}\" names no file under the file's "
                                  "directory, include/ or src/")
                    continue
                edges += 1
                if any(under(rel, p) for p in public_only) and not (
                        target.startswith("include/") or os.path.dirname(target) == os.path.dirname(rel)):
                    errors.append(f"{where}: includes the private header {target}; this file may include only "
                                  "include/ember/ headers (add what it needs to the public API)")
                    continue
                dst_layer = layer_of(target, paths)
                if dst_layer is None:
                    errors.append(f"{where}: includes {target}, which no layer claims")
                elif dst_layer != src_layer and dst_layer not in allowed[src_layer]:
                    why = ("an upward include" if order.index(dst_layer) > order.index(src_layer)
                           else f"'{dst_layer}' is not in 'uses {src_layer}'")
                    errors.append(f"{where}: layer '{src_layer}' includes {target} of layer '{dst_layer}' "
                                  f"({why}; '{src_layer}' may use: "
                                  f"{', '.join(sorted(allowed[src_layer])) or 'nothing'})")
    return errors + backward_rule_errors(root), edges


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--root", default=os.path.dirname(here), help="repository root (default: this script's ..)")
    ap.add_argument("--layers", help="layers file (default: ROOT/docs/layers.txt)")
    args = ap.parse_args()
    layers = args.layers or os.path.join(args.root, "docs", "layers.txt")
    try:
        errors, edges = check(args.root, layers)
    except (LayersError, OSError) as e:
        print(f"check-deps: {e}", file=sys.stderr)
        return 2
    for e in errors:
        print(f"check-deps: {e}", file=sys.stderr)
    if errors:
        print(f"check-deps: {len(errors)} problem(s) against the layer order in {layers} "
              "(see docs/architecture.md)", file=sys.stderr)
        return 1
    print(f"check-deps: {edges} includes checked against {layers}: all point down")
    return 0


if __name__ == "__main__":
    sys.exit(main())
