#!/usr/bin/env python3
"""Renders the README's benchmark table from bench/results/*.json, or checks that it is current.

The README holds the table between `<!-- bench-table:begin -->` and `<!-- bench-table:end -->`.
  scripts/bench_table.py          rewrite that part of README.md from the results files
  scripts/bench_table.py --check  exit 1 (and show both) when README.md differs from the files
Numbers in the README come only from here, so README and results files cannot drift apart.
"""
import glob
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
BEGIN, END = "<!-- bench-table:begin -->", "<!-- bench-table:end -->"


def fmt_bytes(n):
    return f"{n / 2**30:.2f} GiB" if n else "-"


def e2e_rows():
    latest = {}
    for path in sorted(glob.glob(str(ROOT / "bench" / "results" / "e2e-*.json"))):
        r = json.loads(Path(path).read_text())
        key = (r["arch"], r["canvas"], r["threads"], r["command"].split("--isa ")[-1].split()[0]
               if "--isa " in r["command"] else "auto")
        if key not in latest or r["date"] > latest[key][1]["date"]:
            latest[key] = (Path(path).name, r)
    rows = []
    for key in sorted(latest):
        name, r = latest[key]
        llama = r.get("llama_cpp", {}).get("median_step_ms")
        ratio = f"{llama / r['median_step_ms']:.2f}x" if llama else "-"
        rows.append(f"| {r['arch']} synthetic ({r['model_bytes'] / 2**30:.2f} GiB) | {r['canvas']} | "
                    f"{r['threads']} | {key[3]} | {r['median_step_ms']:.0f} | "
                    f"{f'{llama:.0f}' if llama else '-'} | {ratio} | {r['load_ms'] / 1000:.1f} | "
                    f"{fmt_bytes(r['peak_rss_bytes'])} | `{name}` |")
    return rows


def render():
    rows = e2e_rows()
    if not rows:
        return "No benchmark results yet (run `bench/e2e_bench.py`)."
    head = ("| model | canvas | threads | ISA | ms/step (median) | llama.cpp ms/step | speedup | load s | "
            "peak RSS | results file |\n|---|---|---|---|---|---|---|---|---|---|")
    return head + "\n" + "\n".join(rows)


def main():
    text = README.read_text()
    if BEGIN not in text or END not in text:
        sys.exit(f"ERROR: README.md has no {BEGIN} ... {END} section")
    pre, rest = text.split(BEGIN, 1)
    current, post = rest.split(END, 1)
    want = "\n" + render() + "\n"
    if "--check" in sys.argv[1:]:
        if current != want:
            print("README benchmark table is stale; run scripts/bench_table.py\n--- README\n" + current +
                  "\n--- from bench/results\n" + want, file=sys.stderr)
            sys.exit(1)
        print("README benchmark table matches bench/results")
        return
    README.write_text(pre + BEGIN + want + END + post)


if __name__ == "__main__":
    main()
