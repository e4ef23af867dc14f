#!/usr/bin/env python3
# Keeps ember's dependencies pointing down: reads every #include "..." in src/, include/, apps/ and
# python/src/, maps the including and the included file to their layers (docs/layers.txt) and fails
# on an edge that file does not allow, on a public header or app that includes a private header, on
# a file no layer claims, on a vendor header (#include <...>) in a layer that may not use that
# vendor (or in any public header), on a forward declaration of another layer's function or of a
# vendor's C function that the declaring layer may not use (what an include would have shown), and
# on a backward formula in src/ops that indexes a kernel slot itself instead of calling an op
# front-end. Run by ctest (test check_deps); docs/architecture.md explains the rules. The linker
# checks the calls themselves (cmake/ember_layers.cmake).
#   scripts/check-deps.py [--root DIR] [--layers FILE]
import argparse
import fnmatch
import os
import re
import sys

SOURCE_DIRS = ("src", "include", "apps", os.path.join("python", "src"))
SOURCE_EXTS = (".h", ".hpp", ".cpp", ".cc", ".cu", ".cuh")
HEADER_EXTS = (".h", ".hpp", ".cuh")
INCLUDE_RE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')
VENDOR_INCLUDE_RE = re.compile(r'^\s*#\s*include\s*<([^>]+)>')
# The gradient lambda of a backward node: [captures](const std::vector<Tensor>& g) { ... } or
# [captures](const Tensor& g) { ... } (the views' and unary ops' form).
BACKWARD_LAMBDA_RE = re.compile(r'\[[^\]]*\]\s*\(\s*const\s+(?:std::vector<Tensor>|Tensor)\s*&\s*g\s*\)\s*\{')


class LayersError(Exception):
    pass


class Layers:
    """What docs/layers.txt says: the layers bottom first, the paths each claims, the layers each
    may use, the public-only paths, and the vendors (their header and C-function patterns) with the
    layers that may use each."""

    def __init__(self, order, paths, allowed, public_only, vendors, vendor_users):
        self.order, self.paths, self.allowed, self.public_only = order, paths, allowed, public_only
        self.vendors, self.vendor_users = vendors, vendor_users

    def may_use(self, layer, other):
        return other == layer or other in self.allowed.get(layer, set())

    def vendor_of_header(self, target):
        for name, (headers, _) in self.vendors.items():
            if any(fnmatch.fnmatchcase(target, p) for p in headers):
                return name
        return None

    def vendor_of_function(self, fn):
        for name, (_, functions) in self.vendors.items():
            if any(fnmatch.fnmatchcase(fn, p) for p in functions):
                return name
        return None

    def vendor_users_text(self, vendor):
        return ", ".join(sorted(self.vendor_users.get(vendor, ()))) or "none"


def read_layers(path):
    """Returns a Layers from the layers file."""
    order, paths, allowed, public_only = [], [], {}, []
    vendors, vendor_users = {}, {}
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
            elif words[0] == "vendor" and len(words) >= 3:
                name = words[1]
                if name in vendors:
                    raise LayersError(f"{where}: vendor '{name}' declared twice")
                headers = [w for w in words[2:] if not w.endswith("()")]
                functions = [w[:-2] for w in words[2:] if w.endswith("()")]
                vendors[name] = (headers, functions)
            elif words[0] == "vendor-uses" and len(words) >= 3:
                name = words[1]
                if name not in allowed:
                    raise LayersError(f"{where}: 'vendor-uses {name}' before 'layer {name}'")
                for v in words[2:]:
                    if v not in vendors:
                        raise LayersError(f"{where}: layer '{name}' uses unknown vendor '{v}' "
                                          "(declare it with a 'vendor' line first)")
                    vendor_users.setdefault(v, set()).add(name)
            else:
                raise LayersError(f"{where}: expected 'layer NAME PATH...', 'uses NAME LAYER...', "
                                  f"'public-only PATH...', 'vendor NAME PATTERN...' or "
                                  f"'vendor-uses LAYER VENDOR...', got: {line}")
    # Longest prefix first, so a file listed on its own wins over its directory.
    paths.sort(key=lambda p: -len(p[0]))
    return Layers(order, paths, allowed, public_only, vendors, vendor_users)


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


# ---- declarations ------------------------------------------------------------------------------
# A small reader of C++ at namespace scope: enough to find the function declarations (not
# definitions) a file makes and the namespace each sits in. Comments, string and character literals
# and preprocessor lines are blanked first (newlines kept, so offsets still give line numbers).
_BLANK_RE = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'|^[ \t]*#(?:[^\n]*\\\n)*[^\n]*',
                       re.S | re.M)
_DECL_RE = re.compile(
    r'^(?:template\s*<[^;{}]*>\s*)?(?:(?:extern|static|inline|constexpr|\[\[[^\]]*\]\])\s+)*'
    r'(?P<ret>[\w:<>,\s*&]+?[\s*&])(?P<name>~?[A-Za-z_][\w]*(?:::~?[A-Za-z_]\w*)*)\s*'
    r'\((?P<params>[^()]*(?:\([^()]*\)[^()]*)*)\)\s*(?:const|noexcept|override|final|\s)*$', re.S)
_NOT_DECL_HEADS = ("using ", "typedef ", "return ", "friend ", "static_assert", "namespace ", "class ", "struct ",
                   "enum ", "union ", "extern template", "template class", "template struct")
_BUILTIN_TYPES = {"int", "long", "short", "char", "bool", "float", "double", "void", "unsigned", "signed",
                  "size_t", "int64_t", "int32_t", "uint64_t", "uint32_t", "uint8_t", "uint16_t", "int8_t",
                  "int16_t", "auto"}
_PARAM_RE = re.compile(r'^(?:const\s+|volatile\s+|struct\s+|unsigned\s+|signed\s+)*[A-Za-z_][\w:]*\s*(?:<.*>)?'
                       r'(?:\s*(?:const|volatile|\*|&&|&))*(?:\s*[A-Za-z_]\w*)?(?:\s*\[[^\]]*\])*(?:\s*=\s*.+)?$', re.S)


def _blank(text):
    # `extern "C"` survives as one token (its string would be blanked).
    text = re.sub(r'extern\s*"C"', 'extern_C  ', text)
    return _BLANK_RE.sub(lambda m: re.sub(r'[^\n]', ' ', m.group(0)), text)


def _looks_like_params(params):
    params = params.strip()
    if params in ("", "void"):
        return True
    for p in _split_top(params):
        p = p.strip()
        if p == "...":
            continue
        if not p or p[0].isdigit() or '"' in p or "'" in p or not _PARAM_RE.match(p):
            return False
        words = re.findall(r'[A-Za-z_][\w:]*', p.split("=")[0])
        # A parameter is a type (maybe with a name): a pointer/reference, two words, or a builtin.
        if not ("*" in p or "&" in p or len(words) >= 2 or (words and words[0] in _BUILTIN_TYPES)):
            return False
    return True


def _split_top(text):
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch in "<([":
            depth += 1
        elif ch in ">)]":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    return parts


def declarations(text):
    """(line, namespace, name, extern_c) for each function declaration at namespace scope; namespace
    is "ember::cpu"-style ("" at global scope), None inside an anonymous namespace."""
    clean = _blank(text)
    out = []
    stack = []  # one entry per open brace: a namespace name, "" for extern "C", or None for anything else
    start = 0
    i = 0
    n = len(clean)
    while i < n:
        ch = clean[i]
        if ch == "{" and clean.count("(", start, i) > clean.count(")", start, i):
            # A brace inside parentheses (a default argument `= {}`): part of the statement.
            depth = 0
            while i < n:
                depth += {"{": 1, "}": -1}.get(clean[i], 0)
                if depth == 0:
                    break
                i += 1
            i += 1
            continue
        if ch in "{};":
            stmt = clean[start:i]
            at_namespace_scope = all(e is not None and not isinstance(e, tuple) for e in stack)
            if ch == "{":
                head = " ".join(stmt.split())
                m = re.search(r'(?:^|\s)(?:inline\s+)?namespace\s*([\w:]*)\s*$', head)
                if at_namespace_scope and m:
                    stack.append(m.group(1) if m.group(1) else ("anon",))
                elif at_namespace_scope and re.search(r'(?:^|\s)extern_C\s*$', head):
                    stack.append("")
                else:
                    stack.append(None)
            elif ch == "}":
                if stack:
                    stack.pop()
            elif at_namespace_scope:
                decl = " ".join(stmt.split())
                if decl and not decl.startswith(_NOT_DECL_HEADS) and "=" not in decl.split("(")[0]:
                    extern_c = decl.startswith("extern_C")
                    decl = decl[len("extern_C"):].strip() if extern_c else decl
                    m = _DECL_RE.match(decl)
                    if m and not m.group("ret").strip().endswith("operator") and _looks_like_params(m.group("params")):
                        names = [e for e in stack if e]
                        anon = any(isinstance(e, tuple) for e in stack)
                        ns = None if anon else "::".join(names)
                        line = clean.count("\n", 0, start + len(stmt) - len(stmt.lstrip())) + 1
                        out.append((line, ns, m.group("name"), extern_c or ("" in stack)))
            start = i + 1
        i += 1
    return out


def qualified(ns, name):
    return f"{ns}::{name}" if ns else name


def declared_by(root, files, layers):
    """Qualified function name -> {layer: header} for every header's declarations."""
    index = {}
    for rel in files:
        if not rel.endswith(HEADER_EXTS):
            continue
        layer = layer_of(rel, layers.paths)
        if layer is None:
            continue
        with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
            text = f.read()
        for _, ns, name, _ in declarations(text):
            if ns is not None:
                index.setdefault(qualified(ns, name), {}).setdefault(layer, rel)
    return index


def declaration_errors(root, rel, layer, text, layers, index):
    """Forward declarations in a non-public file of functions its layer may not use: another layer's
    (found by the headers that declare the name, else by an ember::<layer> namespace) or a vendor's C
    function (by the vendor's function patterns)."""
    errors = []
    for line, ns, name, extern_c in declarations(text):
        if ns is None:
            continue  # anonymous namespace: the file's own
        where = f"{rel}:{line}"
        if ns == "" or extern_c:
            vendor = layers.vendor_of_function(name.split("::")[-1])
            if vendor and layer not in layers.vendor_users.get(vendor, ()):
                errors.append(f"{where}: layer '{layer}' declares {name}(), a function of vendor '{vendor}', "
                              f"which only these layers may use: {layers.vendor_users_text(vendor)} "
                              "(a backend registers what it reports with core: core/runtime.h)")
            if ns == "":
                continue
        full = qualified(ns, name)
        owners = index.get(full, {})
        if owners:
            if any(layers.may_use(layer, o) for o in owners):
                continue
            owner, header = sorted(owners.items())[0]
            errors.append(f"{where}: layer '{layer}' forward-declares {full}, which {header} of layer '{owner}' "
                          f"declares ('{layer}' may use: {', '.join(sorted(layers.allowed[layer])) or 'nothing'}; "
                          "an upward need goes through registration, see docs/architecture.md)")
            continue
        parts = ns.split("::")
        if len(parts) >= 2 and parts[0] == "ember" and parts[1] in layers.allowed and not layers.may_use(layer, parts[1]):
            errors.append(f"{where}: layer '{layer}' forward-declares {full}, in the namespace of layer "
                          f"'{parts[1]}' ('{layer}' may use: {', '.join(sorted(layers.allowed[layer])) or 'nothing'})")
    return errors


def check(root, layers_path):
    layers = read_layers(layers_path)
    paths, allowed, public_only, order = layers.paths, layers.allowed, layers.public_only, layers.order
    errors, edges = [], 0
    files = list(source_files(root))
    index = declared_by(root, files, layers)
    for rel in files:
        src_layer = layer_of(rel, paths)
        if src_layer is None:
            errors.append(f"{rel}: no layer claims this file; add its directory to {layers_path}")
            continue
        with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
            text = f.read()
        public = rel.startswith("include" + os.sep)
        for lineno, line in enumerate(text.splitlines(), 1):
            where = f"{rel}:{lineno}"
            v = VENDOR_INCLUDE_RE.match(line)
            if v:
                vendor = layers.vendor_of_header(v.group(1))
                if vendor is None:
                    continue
                edges += 1
                if public:
                    errors.append(f"{where}: the public header includes <{v.group(1)}> of vendor '{vendor}'; "
                                  "public headers include no vendor header (wrap it in its backend)")
                elif src_layer not in layers.vendor_users.get(vendor, ()):
                    errors.append(f"{where}: layer '{src_layer}' includes <{v.group(1)}> of vendor '{vendor}', "
                                  f"which only these layers may include: {layers.vendor_users_text(vendor)} "
                                  "(each vendor is wrapped in its layers: docs/architecture.md, \"Vendor libraries\")")
                continue
            m = INCLUDE_RE.match(line)
            if not m:
                continue
            target = resolve(root, rel, m.group(1))
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
        if not public:  # public headers declare the façade, defined where it can be (docs/architecture.md)
            errors += declaration_errors(root, rel, src_layer, text, layers, index)
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
    print(f"check-deps: {edges} includes and the forward declarations checked against {layers}: all point down")
    return 0


if __name__ == "__main__":
    sys.exit(main())
