"""Issue 12's per-op figures against raw oneDNN, over several rounds, judged by one rule.

`build/dnn/neomeg_x86_vs_onednn` (dnn/bench/x86_vs_onednn.cpp) times each case once per run:
our operator, the raw primitive and the primitive with its reorders taking turns, a few calls
each. Even so, on a shared machine a process's speed and its buffers' placement move a ratio by
5-15% from run to run, and a single run cannot tell that from a real gap. This script runs the binary --rounds times for each thread count, the
thread counts taking turns, keeps each figure's best over all rounds (as bench/stream.py does),
and only then forms the ratios, so that every figure had the same chances of a quiet machine.

Which reference a line is held against (oneDNN's time over ours; the target is 0.95):
- a plain line (our operator on plain NCHW tensors in and out; ", new weights": the filter
  changes every call, as in training): the better of the primitive with the reorders a caller
  holding plain tensors needs ("onednn+reorders") and oneDNN's own kernel on plain NCHW (the
  ", nchw" line of the same case: its gemm for 1x1 convolutions);
- a ", blocked" line (our blocked twin on the blocked layout that traced graphs and eager mode
  keep between operators): the primitive alone;
- a MAX pooling backward line: oneDNN's forward (for its workspace) and backward together,
  for our plain and blocked figures each.
The ", nchw" lines only carry a reference; lines without a oneDNN kernel are left out.

    python3 bench/onednn_ratios.py [--build-dir build] [--threads 1 2] [--rounds 3]
                                   [--repeat 20] [--all] [case ...]

Each case argument keeps the cases whose name contains it ("conv 1x1", "pool", "256->64"), as
the binary's own arguments do; a convolution's case is its shape without the pass or the
layout ("conv 1x1 256->64 56x56 b32" brings its fwd, bwd data and bwd filter lines). The table lists the lines below the target (every line with
--all), and a last line per thread count says how many of how many reach it.
"""

import argparse
import os
import re
import subprocess
import sys

from machine import describe

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGET = 0.95

_NUM = r"([\d.]+)"
_PATTERNS = {
    "raw": re.compile(
        rf"ours\s+{_NUM} ms\s+onednn\s+{_NUM} ms \(\s*[\d.]+x\)\s+onednn\+reorders\s+{_NUM} ms"
    ),
    "nchw": re.compile(rf"ours\s+{_NUM} ms\s+onednn on nchw\s+{_NUM} ms"),
    "pool_bwd": re.compile(
        rf"ours nchw\s+{_NUM} ms, blocked\s+{_NUM} ms\s+onednn fwd\+bwd\s+{_NUM} ms"
    ),
    "fwd_bwd": re.compile(rf"ours\s+{_NUM} ms\s+onednn fwd\+bwd\s+{_NUM} ms"),
}
_COLUMNS = {
    "raw": ("ours", "primitive", "reorders"),
    "nchw": ("ours", "gemm"),
    "pool_bwd": ("ours", "ours_blocked", "fwd_bwd"),
    "fwd_bwd": ("ours", "fwd_bwd"),
}


def parse(text):
    """{case name: {column: ms}} of one run's output; lines of no known form are skipped.

    Examples:
        >>> line = "conv 1x1 a fwd" + " " * 34 + "ours    2.000 ms  onednn    1.800 ms ( 0.90x)"
        >>> line += "  onednn+reorders    2.500 ms ( 1.25x)"
        >>> parse(line)
        {'conv 1x1 a fwd': {'ours': 2.0, 'primitive': 1.8, 'reorders': 2.5}}
    """
    cases = {}
    for line in text.splitlines():
        name, sep, rest = line.partition(" ours ")
        if not sep:
            continue
        rest = "ours " + rest
        for kind, pattern in _PATTERNS.items():
            m = pattern.match(rest)
            if m:
                cases[name.strip()] = dict(zip(_COLUMNS[kind], map(float, m.groups())))
                break
    return cases


def merge_best(best, run):
    """Keeps in `best` each case's least time per column over the runs merged so far."""
    for name, columns in run.items():
        kept = best.setdefault(name, {})
        for column, ms in columns.items():
            kept[column] = min(ms, kept.get(column, ms))


def judge_all(cases):
    """[(name, ours ms, reference ms, what the reference is)] by the module's rule.

    Examples:
        >>> cases = {"c fwd": {"ours": 2.0, "primitive": 1.5, "reorders": 2.5},
        ...          "c fwd, nchw": {"ours": 2.0, "gemm": 1.9},
        ...          "c fwd, blocked": {"ours": 1.6, "primitive": 1.5, "reorders": 2.5}}
        >>> judge_all(cases)
        [('c fwd', 2.0, 1.9, 'onednn on nchw'), ('c fwd, blocked', 1.6, 1.5, 'onednn')]
    """
    rows = []
    for name, c in cases.items():
        if name.endswith(", nchw"):
            continue
        if "fwd_bwd" in c:
            suffix = " nchw" if "ours_blocked" in c else ""
            rows.append((name + suffix, c["ours"], c["fwd_bwd"], "onednn fwd+bwd"))
            if "ours_blocked" in c:
                rows.append((name + " blocked", c["ours_blocked"], c["fwd_bwd"], "onednn fwd+bwd"))
        elif "primitive" in c:
            if name.endswith(", blocked"):
                rows.append((name, c["ours"], c["primitive"], "onednn"))
                continue
            ref, what = c["reorders"], "onednn+reorders"
            gemm = cases.get(name.replace(", new weights", "") + ", nchw", {}).get("gemm")
            if gemm is not None and gemm < ref:
                ref, what = gemm, "onednn on nchw"
            rows.append((name, c["ours"], ref, what))
    return rows


def judge(cases):
    """[(name, ours ms, reference ms, ratio, what the reference is)]: judge_all's lines.

    The binary prints milliseconds to three places: a call under 0.5 us reads 0.000, and a ratio
    of it says nothing, so such a line is left out (main counts them).

    Examples:
        >>> cases = {"c fwd": {"ours": 2.0, "primitive": 1.5, "reorders": 2.5},
        ...          "c fwd, nchw": {"ours": 2.0, "gemm": 1.9},
        ...          "c fwd, blocked": {"ours": 1.6, "primitive": 1.5, "reorders": 2.5},
        ...          "tiny fwd": {"ours": 0.0, "primitive": 0.0, "reorders": 0.001}}
        >>> [(n, round(r, 3), ref) for n, _, _, r, ref in judge(cases)]
        [('c fwd', 0.95, 'onednn on nchw'), ('c fwd, blocked', 0.938, 'onednn')]
    """
    return [
        (n, ours, ref, ref / ours, what)
        for n, ours, ref, what in judge_all(cases)
        if ours > 0 and ref > 0
    ]


def run_binary(binary, threads, repeat, cases):
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    out = subprocess.run(
        [binary, str(repeat), "wall", *cases], env=env, capture_output=True, text=True, check=True
    )
    return out.stdout


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build-dir", default=os.path.join(ROOT, "build"))
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--all", action="store_true", help="list every line, not only those below")
    ap.add_argument("cases", nargs="*", help="keep the cases whose name contains one of these")
    args = ap.parse_args()
    binary = os.path.join(args.build_dir, "dnn", "neomeg_x86_vs_onednn")
    if not os.path.exists(binary):
        sys.exit(f"{binary} is not built (ninja -C {args.build_dir} neomeg_x86_vs_onednn)")
    print(describe())
    best = {t: {} for t in args.threads}
    for r in range(args.rounds):
        for t in args.threads:
            merge_best(best[t], parse(run_binary(binary, t, args.repeat, args.cases)))
        print(f"round {r + 1} of {args.rounds} done; {describe()}", flush=True)
    for t in args.threads:
        rows = judge(best[t])
        print(f"\n{t} thread(s), best of {args.rounds} rounds x {args.repeat} calls")
        print(f"{'case':<52} {'ours ms':>9} {'ref ms':>9} {'ratio':>6}  reference")
        for name, ours, ref, ratio, what in sorted(rows, key=lambda row: row[3]):
            if args.all or ratio < TARGET:
                print(f"{name:<52} {ours:9.3f} {ref:9.3f} {ratio:6.2f}  {what}")
        reached = sum(ratio >= TARGET for *_, ratio, _ in rows)
        print(f"{reached} of {len(rows)} lines at or above {TARGET} at {t} thread(s)")
        unread = len(judge_all(best[t])) - len(rows)
        if unread:
            print(f"({unread} line(s) under the binary's 0.001 ms resolution left out)")


if __name__ == "__main__":
    main()
