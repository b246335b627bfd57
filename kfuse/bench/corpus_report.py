"""The corpus report: summary (geometric mean of kfuse's speed over each peer, entries below
0.9x torch.compile / below 1.0x NumPy, the worst ten), the per-entry table (each peer's time and
kfuse's speed over it, % of copy bandwidth, correctness, kernel count, predicted vs measured),
kfuse's per-kernel predicted vs measured times, and every peer that could not run an entry.

Speed is ``peer_ms / kfuse_ms`` (>1: kfuse is faster). Markdown is written for
``benchmarks/RESULTS.md``; ``python -m kfuse.bench.corpus_report OUT.md A.json B.json ...`` merges
the JSON of several shards (``--shard K/N``) into one report.
"""
from __future__ import annotations

import json
import math
import sys

from .report import _device_line, _plain, ceilings_lines, command_line, write_json  # noqa: F401

KFUSE_PREFIX = "kfuse["


def _num(x):
    return x if isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) else None


def kfuse_impl(result: dict) -> str | None:
    """The primary kfuse row name: kfuse[cpu] or kfuse[cuda]."""
    names = [n for n, p in result["peers"].items() if n.startswith(KFUSE_PREFIX) and p.get("available")]
    for want in ("kfuse[cuda]", "kfuse[cpu]"):
        if want in names:
            return want
    return names[0] if names else None


def primary_peer(result: dict) -> str:
    return "numpy" if result["meta"]["device"] == "cpu" else "torch.compile"


def speeds(result: dict) -> dict[str, dict[str, float]]:
    """{entry: {peer: peer_ms / kfuse_ms}} over entries where both ran."""
    kf = kfuse_impl(result)
    by: dict[str, dict[str, float]] = {}
    for r in result["rows"]:
        if r.get("ok"):
            by.setdefault(r["case"], {})[r["impl"]] = r["ms"]
    out = {}
    for case, t in by.items():
        if kf in t:
            out[case] = {p: ms / t[kf] for p, ms in t.items() if p != kf}
    return out


def geomean(xs: list[float]) -> float | None:
    xs = [x for x in xs if x and x > 0 and math.isfinite(x)]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def summary(result: dict) -> dict:
    """Geometric mean speed per peer, counts below thresholds, the worst ten (by the speed over
    torch.compile on the GPU, NumPy on the CPU; the lowest speed over any peer where that is absent)."""
    sp = speeds(result)
    peers = sorted({p for d in sp.values() for p in d})
    per_peer = {p: {"geomean": geomean([d[p] for d in sp.values() if p in d]),
                    "entries": sum(1 for d in sp.values() if p in d),
                    "slower": sum(1 for d in sp.values() if p in d and d[p] < 1.0)} for p in peers}
    prim = primary_peer(result)

    def key(item):
        d = item[1]
        return d[prim] if prim in d else min(d.values(), default=math.inf)
    worst = sorted(((c, d) for c, d in sp.items() if d), key=key)[:10]
    kf = kfuse_impl(result)
    wrong = [r["case"] for r in result["rows"] if r["impl"] == kf and r.get("correct") is False]
    refused = [(r["case"], r.get("error")) for r in result["rows"] if r["impl"] == kf and not r.get("ok")]
    return {"kfuse": kf, "per_peer": per_peer,
            "below_0.9x_torch.compile": sum(1 for d in sp.values() if d.get("torch.compile", math.inf) < 0.9),
            "below_1.0x_numpy": sum(1 for d in sp.values() if d.get("numpy", math.inf) < 1.0),
            "worst": [{"entry": c, "speed": d, "key": key((c, d))} for c, d in worst],
            "kfuse_wrong": wrong, "kfuse_failed": refused}


def _ms(x):
    x = _num(x)
    if x is None:
        return "–"
    return f"{x:.3f}" if x < 10 else f"{x:.1f}"


def _x(x):
    x = _num(x)
    return "–" if x is None else f"{x:.2f}×"


def _mib(b):
    b = _num(b)
    return "–" if b is None else (f"{b / 2**20:.1f}" if b >= 2**20 else f"{b / 2**10:.1f} Ki")


def markdown(result: dict) -> str:
    m = result["meta"]
    kf = kfuse_impl(result)
    s = summary(result)
    peers = [p for p, i in result["peers"].items() if i.get("available") and p != kf]
    out = [f"### Corpus ({m['device'].upper()}, size class {m['size']}{', quick' if m.get('quick') else ''})", "",
           f"{_device_line(result)}; {len(result['cases'])} entries; wall {m.get('wall_s', 0):.0f} s; "
           f"`{command_line(m.get('argv') or ['kfuse'])}`", ""]
    if m["device"] == "cpu":
        out += [f"kfuse[cpu] ran on {m.get('kfuse_cpu_threads') or '?'} Numba thread(s). Timings on a shared "
                "machine are noisy: read ratios near 1 as ties.", ""]
    out += ceilings_lines(result) + [""]
    unavailable = [f"- {p}: {i.get('reason')}" for p, i in result["peers"].items() if not i.get("available")]
    if unavailable:
        out += ["Peers not run:"] + unavailable + [""]
    out += ["#### Summary (speed = peer time / kfuse time; > 1: kfuse faster)", "",
            "| peer | entries | geomean speed | entries where kfuse is slower |", "|---|---|---|---|"]
    for p, d in s["per_peer"].items():
        out.append(f"| {p} | {d['entries']} | {_x(d['geomean'])} | {d['slower']} |")
    def count(key, peer):
        n = s["per_peer"].get(peer, {}).get("entries")
        return f"**{s[key]}** of {n}" if n else "– (not a peer here)"
    out += ["", f"- entries below 0.9× torch.compile: {count('below_0.9x_torch.compile', 'torch.compile')}; "
                f"below 1.0× NumPy: {count('below_1.0x_numpy', 'numpy')}",
            f"- kfuse wrong (over its tolerance class): {', '.join(s['kfuse_wrong']) or 'none'}",
            f"- kfuse did not run: " + ("; ".join(f"{c} ({e})" for c, e in s["kfuse_failed"]) or "none"), "",
            f"Worst ten (by speed over {primary_peer(result)}):", "",
            "| entry | " + " | ".join(peers) + " |", "|---|" + "---|" * len(peers)]
    for w in s["worst"]:
        out.append(f"| {w['entry']} | " + " | ".join(_x(w["speed"].get(p)) for p in peers) + " |")
    out += ["", "#### Entries", "",
            "| entry | category | MiB moved | " + (kf or "kfuse") + " ms | % copy BW | kernels | predicted ms | "
            "measured / predicted | rel. err | " + " | ".join(f"{p} ms (speed)" for p in peers) + " |",
            "|" + "---|" * (9 + len(peers))]
    rows = {(r["case"], r["impl"]): r for r in result["rows"]}
    for c in result["cases"]:
        k = rows.get((c["label"], kf), {})
        if k.get("ok"):
            pred = _num(k.get("predicted_ms"))
            err = f"{k['rel_err']:.1e}{'' if k.get('correct', True) else ' ✗'}" if _num(k.get("rel_err")) is not None \
                else ("✗ " + str(k.get("rel_err")) if "rel_err" in k else "–")
            cells = [_ms(k["ms"]), f"{100 * k['frac_ceiling']:.0f}%" if _num(k.get("frac_ceiling")) else "–",
                     str(k.get("kernels", "–")), _ms(pred), _x(k["ms"] / pred if pred else None), err]
        else:
            cells = [f"✗ {(k.get('error') or 'not run')[:60]}", "–", "–", "–", "–", "–"]
        for p in peers:
            r = rows.get((c["label"], p), {})
            if r.get("ok"):
                sp = r["ms"] / k["ms"] if k.get("ok") else None
                bad = "" if r.get("correct", True) else " ✗"
                cells.append(f"{_ms(r['ms'])} ({_x(sp)}){bad}")
            else:
                cells.append("✗")
        out.append(f"| {c['label']} | {c['category']} | {_mib(c.get('bytes'))} | " + " | ".join(cells) + " |")
    out += ["", "#### kfuse per kernel: predicted vs measured", "",
            "CPU kernels are predicted for the threads they ran on (thr.; the runtime runs one where the machine is busy).", "",
            "| entry | kernel | kind | thr. | predicted µs | measured µs | measured / predicted | ops |",
            "|---|---|---|---|---|---|---|---|"]
    for c in result["cases"]:
        k = rows.get((c["label"], kf), {})
        kt = k.get("kernel_times")
        if not kt:
            continue
        for kr in kt["kernels"]:
            p, g = _num(kr.get("predicted_us")), _num(kr.get("measured_us"))
            out.append(f"| {c['label']} | {kr['kernel']} | {kr['kind']} | {kr.get('threads') or '–'} | {_f1(p)} | {_f1(g)} | "
                       f"{_x(g / p if p and g else None)} | {kr['ops']} |")
    fails = [r for r in result["rows"] if not r.get("ok")]
    if fails:
        out += ["", "#### Peers that did not run an entry", "", "| entry | peer | reason |", "|---|---|---|"]
        for r in fails:
            out.append(f"| {r['case']} | {r['impl']} | {(r.get('error') or '').replace('|', '/')[:160]} |")
    return "\n".join(out) + "\n"


def _f1(x):
    return "–" if x is None else f"{x:.1f}"


def write_markdown(result: dict, path: str) -> None:
    import os
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        f.write(markdown(result))


def merge(results: list[dict]) -> dict:
    """One result of several shards' (same device): cases, rows and peers concatenated."""
    base = json.loads(json.dumps(results[0]))
    for r in results[1:]:
        base["cases"] += r["cases"]
        base["rows"] += r["rows"]
        for p, i in r["peers"].items():
            if i.get("available") or p not in base["peers"]:
                base["peers"][p] = i
        base["meta"]["wall_s"] = base["meta"].get("wall_s", 0) + r["meta"].get("wall_s", 0)
    base["meta"]["shard"] = "merged"
    return base


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if len(argv) < 2:
        print("usage: python -m kfuse.bench.corpus_report OUT.md RESULT.json [RESULT.json ...]", file=sys.stderr)
        return 2
    results = []
    for p in argv[1:]:
        with open(p) as f:
            results.append(json.load(f))
    write_markdown(merge(results), argv[0])
    return 0


if __name__ == "__main__":
    sys.exit(main())
