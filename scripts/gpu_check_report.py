"""The end of scripts/gpu-check.sh: what comes back from a GPU machine through a narrow pipe (the last
12,000 characters of stdout and at most 8 files of at most 16 MiB under $OUT).
  - writes OUTDIR/summary.json: every step (name, status PASS/FAIL/SKIP, reason, seconds, key
    figures read from its JSON or log);
  - prints the PASS/FAIL table, then the failure digest: each failing gtest's name and its assertion
    lines (from the gtest JSON files a step wrote, else from its log), each other failing step's
    last lines; the table and digest together stay under --budget characters (default 10,500).
Only the Python standard library.
  usage: python3 scripts/gpu_check_report.py STEPS_TSV LOGDIR OUTDIR [--budget N] [--meta JSON]
STEPS_TSV: one line per step, "name<TAB>status<TAB>reason<TAB>seconds<TAB>log file (in LOGDIR) or -".
Exit status: 0, or 2 on a usage error."""
import glob
import json
import os
import re
import sys

TABLE_ROW = "{:<26} {:<6} {:>5}  {}"


def load_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def tail_lines(path, n):
    try:
        with open(path, errors="replace") as f:
            lines = f.read().splitlines()
    except OSError:
        return ["(no log: {})".format(os.path.basename(path))]
    return [line for line in lines if line.strip()][-n:]


# ---- key figures, per step ------------------------------------------------------------------------

def gtest_counts(files):
    """Totals over gtest JSON outputs: tests, failures, skipped; None when no file was written."""
    tests = failures = skipped = 0
    seen = False
    for path in files:
        d = load_json(path)
        if not d:
            continue
        seen = True
        for suite in d.get("testsuites", []):
            for t in suite.get("testsuite", []):
                if t.get("status") == "NOTRUN":
                    continue
                tests += 1
                if t.get("failures"):
                    failures += 1
                elif t.get("result") == "SKIPPED":
                    skipped += 1
    return {"tests": tests, "failed": failures, "skipped": skipped} if seen else None


def figures_for(name, logdir):
    p = lambda f: os.path.join(logdir, f)  # noqa: E731
    if name.startswith("gpu_tests") or name in ("cpu_tests", "sanitizer", "fake_fail"):
        return gtest_counts(sorted(glob.glob(p(name + ".json")) + glob.glob(p(name + ".shard*.json"))))
    if name.startswith("bench_matmul"):
        d = load_json(p(name + ".json")) or {}
        rows = d.get("results", [])
        best = max((r.get("cuda0_gflops") or 0 for r in rows), default=0)
        cpu = max((r.get("cpu_gflops") or 0 for r in rows), default=0)
        diff = max((r.get("cuda0_max_rel_diff") or 0 for r in rows), default=0)
        return {"cuda0_gflops_max": best, "cpu_gflops_max": cpu, "max_rel_diff": diff} if rows else None
    if name == "bench_bandwidth":
        d = load_json(p(name + ".json")) or {}
        r = next((r for r in d.get("results", []) if r.get("device") == 0), None)
        return {k: r.get(k) for k in ("h2d_pinned", "d2h_pinned", "d2d", "h2d_pageable", "d2h_pageable")} if r else None
    if name.startswith("bench_train"):
        d = load_json(p(name + ".json")) or {}
        rows = d.get("results", [])
        if not rows:
            return None
        pts = {}
        for r in rows:
            key = "{} b{}".format(r.get("model"), r.get("batch_size"))
            pts.setdefault(key, {})[r.get("device")] = round(r.get("samples_per_s") or 0, 1)
        out = {}
        for key, devs in pts.items():
            gpu = next((v for k, v in devs.items() if str(k).startswith("cuda")), None)
            cpu = devs.get("cpu")
            out[key] = {"samples_per_s": devs}
            if gpu and cpu:
                out[key]["speedup"] = round(gpu / cpu, 2)
        return out
    if name.startswith("train_"):
        # The run's last epoch record: test accuracy and loss (metrics.jsonl in the run directory,
        # copied into the logs as <step>.metrics.jsonl).
        last = None
        try:
            with open(p(name + ".metrics.jsonl")) as f:
                for line in f:
                    try:
                        rec = json.loads(line)
                    except ValueError:
                        continue
                    if rec.get("kind") == "epoch":
                        last = rec
        except OSError:
            return None
        if not last:
            return None
        return {k: last[k] for k in last if k in ("epoch", "test_acc", "test_loss", "train_loss", "time",
                                                   "seconds", "samples_per_s", "skipped_steps", "loss_scale")}
    if name == "torch_side":
        d = load_json(p("torch_side.json")) or {}
        train = d.get("train") or []
        return {"train": [{k: t.get(k) for k in ("model", "batch_size", "samples_per_s")} for t in train],
                "bandwidth": d.get("bandwidth")} if d else None
    if name == "cuobjdump":
        try:
            with open(p("cuobjdump.log"), errors="replace") as f:
                archs = sorted(set(re.findall(r"\bsm_\d+a?\b", f.read())))
        except OSError:
            return None
        return {"archs": archs}
    return None


# ---- the failure digest -----------------------------------------------------------------------------

def gtest_failures_json(files):
    """[(test name, [assertion lines])] from gtest JSON outputs."""
    out = []
    for path in files:
        d = load_json(path)
        if not d:
            continue
        for suite in d.get("testsuites", []):
            for t in suite.get("testsuite", []):
                if not t.get("failures"):
                    continue
                lines = []
                for f in t["failures"]:
                    lines += [ln for ln in f.get("failure", "").splitlines() if ln.strip()]
                out.append(("{}.{}".format(suite.get("name"), t.get("name")), lines))
    return out


def gtest_failures_log(path):
    """[(test name, [lines])] from a gtest log (also --gtest_brief=1, which prints no RUN lines):
    the lines since the previous test marker, for each "[  FAILED  ] Name (N ms)"."""
    out, buf = [], []
    try:
        with open(path, errors="replace") as f:
            lines = f.read().splitlines()
    except OSError:
        return out
    for line in lines:
        m = re.match(r"\[  FAILED  \] (\S+) \(\d+ ms\)", line)
        if m:
            out.append((m.group(1), [ln for ln in buf if ln.strip()]))
            buf = []
        elif re.match(r"\[ *(RUN|OK|SKIPPED|PASSED|=+|-+) *\]", line):
            buf = []
        else:
            buf.append(line)
    return out


def clip(line, width=220):
    return line if len(line) <= width else line[:width - 3] + "..."


def digest(steps, logdir, budget):
    """The digest's lines, at most `budget` characters in all; what does not fit is counted."""
    entries = []  # (header, [lines])
    # Steps that failed before they ran, for one reason (no GPU ember can use: every GPU step), once.
    unrun = {}
    for s in steps:
        if s["status"] == "FAIL" and not s.get("log"):
            unrun.setdefault(s["reason"], []).append(s["step"])
    for reason, names in unrun.items():
        entries.append(("## {}: FAIL ({})".format(", ".join(names), reason), []))
    for s in steps:
        if s["status"] != "FAIL" or not s.get("log"):
            continue
        name = s["step"]
        files = sorted(glob.glob(os.path.join(logdir, name + ".json")) +
                       glob.glob(os.path.join(logdir, name + ".shard*.json")))
        fails = gtest_failures_json(files)
        if not fails:
            for log in [s.get("log")] + sorted(glob.glob(os.path.join(logdir, name + ".shard*.log"))):
                if log:
                    fails += gtest_failures_log(os.path.join(logdir, os.path.basename(log)))
        log = s.get("log") or "-"
        if fails:
            entries.append(("## {}: FAIL ({}), {} failing test(s); log: logs/{}".format(
                name, s["reason"], len(fails), os.path.basename(log)), []))
            for test, lines in fails:
                entries.append(("  [FAILED] " + test, ["    " + clip(ln) for ln in lines[:8]] +
                                (["    ... {} more lines".format(len(lines) - 8)] if len(lines) > 8 else [])))
        else:
            tail = tail_lines(os.path.join(logdir, os.path.basename(log)), 12)
            entries.append(("## {}: FAIL ({}); last lines of logs/{}:".format(name, s["reason"], os.path.basename(log)),
                            ["    " + clip(ln) for ln in tail]))
    out, used, left = [], 0, 0
    for header, lines in entries:
        block = [header] + lines
        size = sum(len(ln) + 1 for ln in block)
        if used + size <= budget:
            out += block
            used += size
        elif used + len(header) + 1 <= budget:
            out.append(header + "  (details left out: see the archive)")
            used += len(header) + 40
        else:
            left += 1
    if left:
        out.append("... {} more digest entries left out; every log is in the archive".format(left))
    return out


def main(argv):
    import argparse
    ap = argparse.ArgumentParser(description="the end of scripts/gpu-check.sh")
    ap.add_argument("tsv")
    ap.add_argument("logdir")
    ap.add_argument("outdir")
    ap.add_argument("--budget", type=int, default=10500)
    ap.add_argument("--meta", default="{}")
    a = ap.parse_args(argv)
    tsv, logdir, outdir, budget, meta = a.tsv, a.logdir, a.outdir, a.budget, json.loads(a.meta)
    steps = []
    with open(tsv) as f:
        for line in f:
            parts = line.rstrip("\n").split("\t")
            if len(parts) < 5:
                continue
            name, status, reason, seconds, log = parts[:5]
            steps.append({"step": name, "status": status, "reason": reason, "seconds": int(seconds),
                          "log": None if log == "-" else log})
    for s in steps:
        s["figures"] = figures_for(s["step"], logdir)
    summary = dict(meta)
    summary["passed"] = sum(s["status"] == "PASS" for s in steps)
    summary["failed"] = sum(s["status"] == "FAIL" for s in steps)
    summary["skipped"] = sum(s["status"] == "SKIP" for s in steps)
    summary["steps"] = steps
    with open(os.path.join(outdir, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)

    table = [TABLE_ROW.format("STEP", "STATUS", "SEC", "WHY / FIGURES")]
    for s in steps:
        note = s["reason"]
        fig = s["figures"]
        if fig and s["step"].startswith(("gpu_tests", "cpu_tests", "sanitizer", "fake_fail")):
            note = (note + "; " if note else "") + "{tests} tests, {failed} failed, {skipped} skipped".format(**fig)
        table.append(clip(TABLE_ROW.format(s["step"], s["status"], s["seconds"], note), 160))
    used = sum(len(ln) + 1 for ln in table)
    print("\n".join(table))
    lines = digest(steps, logdir, max(budget - used - 200, 1000))
    print()
    if lines:
        print("==== FAILURE DIGEST ({} failing step(s)) ====".format(summary["failed"]))
        print("\n".join(lines))
        print("==== END OF DIGEST ====")
    else:
        print("==== FAILURE DIGEST: nothing failed ====")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
