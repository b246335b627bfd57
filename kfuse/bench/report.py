"""Writes a suite result (the dict from ``suite.run_suite``) as JSON, a markdown report, a roofline
PNG, and the CPU/GPU section of ``benchmarks/RESULTS.md``.

Per row: ms (median, min-max), GB/s or TFLOP/s, fraction of the ceiling, speed-up over the eager
baseline (NumPy on the CPU, CuPy on the GPU), relative error vs the float64 reference, compile
time (cold), warm disk load (new process), hot dispatch overhead, and for kfuse the planner's
predicted time. A second table gives kfuse's speed-up over each peer.
"""
from __future__ import annotations

import json
import math
import os
import re

KFUSE_PREFIX = "kfuse["


def command_line(argv: list[str]) -> str:
    """The suite's command as a user types it: ``kfuse bench ARGS`` whether it ran as the
    ``kfuse bench`` subcommand (argv ``[kfuse, bench, ARGS...]``) or as ``python -m
    kfuse.bench.cli`` (argv ``[cli.py, ARGS...]``)."""
    args = list(argv[1:])
    if args[:1] == ["bench"]:
        args = args[1:]
    return " ".join(["kfuse", "bench"] + args)


def _f(x, fmt="{:.3g}", dash="–"):
    if isinstance(x, str):   # "inf" / "nan" from a reloaded JSON
        return x
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return dash if x is None else str(x)
    return fmt.format(x)


def _ms(x):
    if x is None:
        return "–"
    return f"{x:.3f}" if x < 10 else f"{x:.1f}"


def _si(x, unit):
    if x is None:
        return "–"
    for scale, p in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(x) >= scale:
            return f"{x / scale:.3g} {p}{unit}"
    return f"{x:.3g} {unit}"


def _secs(x):
    if x is None:
        return "–"
    return f"{x * 1e3:.0f} ms" if x < 1 else f"{x:.2f} s"


def baseline_impl(result: dict) -> str:
    return "numpy" if result["meta"]["device"] == "cpu" else "cupy"


def primary_kfuse(result: dict, case: str) -> str | None:
    names = [r["impl"] for r in result["rows"] if r["case"] == case and r.get("ok")
             and r["impl"].startswith(KFUSE_PREFIX) and "tuned" not in r["impl"]]
    return names[0] if names else None


def _plain(x):
    """JSON-safe copy: non-finite floats become the strings "inf" / "-inf" / "nan"."""
    if isinstance(x, float) and not math.isfinite(x):
        return "nan" if x != x else ("inf" if x > 0 else "-inf")
    if isinstance(x, dict):
        return {str(k): _plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_plain(v) for v in x]
    return x


def write_json(result: dict, path: str) -> None:
    _mkdir(path)
    with open(path, "w") as f:
        json.dump(_plain(result), f, indent=1, default=str, allow_nan=False)


def _mkdir(path: str) -> None:
    d = os.path.dirname(os.path.abspath(path))
    os.makedirs(d, exist_ok=True)


def _device_line(result: dict) -> str:
    m = result["meta"]
    di = m["device_info"]
    if m["device"] == "cpu":
        load = m.get("loadavg_start")
        ld = f"; load average at start {load[0]:.2f}, at end {m['loadavg_end'][0]:.2f}" if load and m.get("loadavg_end") else ""
        return f"CPU: {di.get('name')} ({di.get('cores')} threads, {di.get('memory')}{ld})"
    extra = []
    if di.get("driver"):
        extra.append(f"driver {di['driver']}")
    if di.get("cuda_runtime"):
        extra.append(f"CUDA runtime {di['cuda_runtime']}")
    if di.get("sms"):
        extra.append(f"{di['sms']} SMs")
    if di.get("l2_bytes"):
        extra.append(f"L2 {di['l2_bytes'] / 2**20:.0f} MiB")
    return f"GPU: {di.get('name', '?')} ({', '.join(extra)})"


def ceilings_lines(result: dict) -> list[str]:
    c = result.get("ceilings", {})
    out = []
    for key, label in (("bandwidth", "copy bandwidth (ceiling of memory-bound rows)"),
                       ("copy_numpy", "np.copyto"), ("copy_parallel", "parallel copy"),
                       ("copy_memcpy", "cudaMemcpy D2D"), ("copy_kernel", "copy kernel"),
                       ("peak_f16", "f16 GEMM peak"), ("peak_f32", "f32 GEMM peak")):
        e = c.get(key)
        if e:
            out.append(f"- {label}: **{_si(e['value'], e['unit'])}** ({e['how']})")
    for k, e in c.get("gemm", {}).items():
        out.append(f"- GEMM {k} (ceiling of P5 at this shape): **{_si(e['value'], e['unit'])}** ({e['how']})")
    if c.get("levels"):         # the CPU cost model's memory levels, as measured here
        out.append("- streaming loop by working set (the CPU cost model's levels): " + ", ".join(
            f"{k} {_si(e['value'], e['unit'])}" for k, e in c["levels"].items()))
    for k, e in c.get("errors", {}).items():
        out.append(f"- {k}: not measured ({e})")
    return out


def markdown_table(result: dict) -> str:
    base = baseline_impl(result)
    cases = {c["label"]: c for c in result["cases"]}
    hdr = ("| workload | impl | ms median (min–max) | throughput | % of ceiling | × vs " + base +
           " | rel. err | compile (cold) | warm load | dispatch µs | predicted ms |")
    lines = [hdr, "|" + "---|" * (hdr.count("|") - 1)]
    for label, c in cases.items():
        rows = [r for r in result["rows"] if r["case"] == label]
        base_ms = next((r["ms"] for r in rows if r["impl"] == base and r.get("ok")), None)
        for r in rows:
            if not r.get("ok"):
                continue
            if c["bound"] == "compute":
                thr = _si(r["gflops"] * 1e9, "FLOP/s")
            else:
                thr = _si(r["gbps"] * 1e9, "B/s")
            vs = _f(base_ms / r["ms"], "{:.2f}×") if base_ms else "–"
            warm = _secs(r.get("warm_load_s")) if "warm_load_s" in r else ("err" if r.get("warm_load_error") else "–")
            lines.append(
                f"| {label} | {r['impl']} | {_ms(r['ms'])} ({_ms(r['ms_min'])}–{_ms(r['ms_max'])}) | {thr} | "
                f"{_f(r.get('frac_ceiling') and 100 * r['frac_ceiling'], '{:.0f}%')} | {vs} | "
                f"{_err_cell(r)} | {_secs(r.get('compile_s'))} | {warm} | "
                f"{_f(r.get('dispatch_us'), '{:.1f}')} | {_f(r.get('predicted_ms'), '{:.3g}')} |")
    return "\n".join(lines)


def _err_cell(r: dict) -> str:
    cell = _f(r.get("rel_err"), "{:.1e}")
    return cell + (" ✗ wrong" if r.get("correct") is False else "")


def ratio_table(result: dict) -> str:
    impls = []
    for r in result["rows"]:
        if r.get("ok") and not r["impl"].startswith(KFUSE_PREFIX) and r["impl"] not in impls:
            impls.append(r["impl"])
    if not impls:
        return "_no peers ran beside kfuse_"
    lines = ["| workload | kfuse impl | " + " | ".join(impls) + " |", "|" + "---|" * (len(impls) + 2)]
    any_row = False
    for c in result["cases"]:
        k = primary_kfuse(result, c["label"])
        if not k:
            continue
        rat = result["ratios"].get(c["label"], {}).get(k, {})
        cells = [_f(rat.get(p), "{:.2f}×") for p in impls]
        krow = next(r for r in result["rows"] if r["case"] == c["label"] and r["impl"] == k)
        flag = " (✗ wrong result)" if krow.get("correct") is False else ""
        lines.append(f"| {c['label']} | {k}{flag} | " + " | ".join(cells) + " |")
        any_row = True
    return "\n".join(lines) if any_row else "_kfuse did not run_"


def failures(result: dict) -> list[str]:
    out = []
    for name, p in result["peers"].items():
        if not p.get("available"):
            out.append(f"- {name}: unavailable ({p.get('reason')})")
    for r in result["rows"]:
        if not r.get("ok"):
            out.append(f"- {r['case']} {r['impl']}: {r.get('error')}")
        elif r.get("correct") is False:
            out.append(f"- {r['case']} {r['impl']}: wrong result (relative error {_f(r.get('rel_err'), '{:.2g}')} "
                       "vs the float64 reference)")
        elif r.get("note"):
            out.append(f"- {r['case']} {r['impl']}: {r['note']}")
    return out


def markdown(result: dict, plot_path: str | None = None, heading: str = "#") -> str:
    m = result["meta"]
    vers = ", ".join(f"{k} {v}" for k, v in m["versions"].items())
    parts = [f"{heading} kfuse bench — {m['device'].upper()} run, {m['date']}", "",
             f"- {_device_line(result)}", f"- Versions: {vers}",
             f"- Suite: {m['suite']} ({m['size']} sizes); wall time {m['wall_s']:.0f} s; "
             f"planner device `{m.get('planner_device')}`",
             f"- Command: `{command_line(m['argv'])}`", ""]
    load, cores = m.get("loadavg_start"), m["device_info"].get("cores") or m["device_info"].get("host_cpu", {}).get("cores")
    if m["device"] == "cpu" and load and cores and load[0] > 0.5 * cores:   # the run itself adds ~1-2
        parts += [f"> **Busy machine:** the load average ({load[0]:.1f} at start) was above half the "
                  f"{cores} hardware threads, so other processes shared the CPU during this run; "
                  "multi-threaded implementations (kfuse's parallel loops, PyTorch, BLAS) suffer most. "
                  "Compare the min column, and re-run on an idle machine.", ""]
    parts += [f"{heading}# Ceilings (measured in this run)", ""] + ceilings_lines(result) + [""]
    if plot_path:
        parts += [f"![roofline]({plot_path})", ""]
    parts += [f"{heading}# Results", "",
              "ms: the median of every run of the case's timed rounds (each round times every peer once, "
              "the order rotated). "
              "Throughput counts each input read once and each output written once (GB/s), or nominal "
              "FLOPs (P5). % of ceiling: of the copy bandwidth (memory-bound rows) or of cuBLAS/BLAS GEMM "
              "alone at the same shape (P5). rel. err: ‖y − ref‖/‖ref‖ against a float64 NumPy reference "
              "on the leading rows (✗ wrong: above 1e-4 for f32, 1e-2 for f16). Above 100 % of the copy "
              "ceiling is possible for read-mostly rows (P4): the copy's own write traffic costs more than "
              "the bytes it is credited with. compile (cold): first call minus a hot call, empty kfuse cache. warm "
              "load: the same in a new process with the disk cache filled. dispatch: host µs per call on "
              "a ~1024-element input. predicted: kfuse planner's cost model.", "",
              markdown_table(result), "", f"{heading}# kfuse speed-up over each peer (peer time / kfuse time)", "",
              ratio_table(result), ""]
    for c in result["cases"]:
        for r in result["rows"]:
            if r["case"] == c["label"] and r.get("plan") and r["impl"].startswith(KFUSE_PREFIX):
                extra = f"\n{r['gemm_choices']}" if r.get("gemm_choices") else ""
                pred = f", predicted {r['predicted_ms']:.3g} ms" if r.get("predicted_ms") is not None else ""
                parts.append(f"<details><summary>{c['label']} {r['impl']} plan (measured {r['ms']:.3g} ms{pred})"
                             f"</summary>\n\n```\n{r['plan']}{extra}\n```\n</details>\n")
                break
    fl = failures(result)
    if fl:
        parts += [f"{heading}# Not run / errors", ""] + fl + [""]
    return "\n".join(parts)


def write_markdown(result: dict, path: str, plot_path: str | None = None) -> None:
    _mkdir(path)
    rel = os.path.relpath(plot_path, os.path.dirname(os.path.abspath(path))) if plot_path else None
    with open(path, "w") as f:
        f.write(markdown(result, rel))


# ---- roofline ----------------------------------------------------------------------------------
_MARKERS = "o^sDv<>pP*Xh"


def _x_positions(cases: dict) -> dict:
    """Intensity per case, nudged apart where several cases share one (P4 and P6 both 0.5)."""
    pos, seen = {}, {}
    for label, c in cases.items():
        key = round(math.log10(c["intensity"]), 2)
        k = seen.get(key, 0)
        seen[key] = k + 1
        pos[label] = c["intensity"] * (1.0 + 0.12 * ((k + 1) // 2) * (1 if k % 2 else -1))
    return pos


def write_roofline(result: dict, path: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    m = result["meta"]
    ceil = result.get("ceilings", {})
    cases = {c["label"]: c for c in result["cases"]}
    xpos = _x_positions(cases)
    ok_rows = [r for r in result["rows"] if r.get("ok")]
    impls = []
    for r in ok_rows:
        if r["impl"] not in impls:
            impls.append(r["impl"])
    fig, ax = plt.subplots(figsize=(13, 6.5), dpi=120)
    xs = [c["intensity"] for c in cases.values()] or [1.0]
    bw = ceil.get("bandwidth", {}).get("value")
    peaks = sorted(((ceil[k]["value"], ceil[k]["how"]) for k in ("peak_f16", "peak_f32") if ceil.get(k)),
                   reverse=True)
    xmin, xmax = min(xs) / 4, max(xs) * 4
    if bw and peaks:
        xmax = max(xmax, peaks[0][0] / bw * 4)
    grid = [xmin * (xmax / xmin) ** (i / 300) for i in range(301)]
    if bw:
        top = peaks[0][0] if peaks else bw * xmax
        ax.plot(grid, [min(bw * x, top) for x in grid], color="black", lw=1.6,
                label=f"bandwidth roof: {bw / 1e9:.0f} GB/s\n({ceil['bandwidth']['how']})")
        for i, (p, how) in enumerate(peaks):
            xr = p / bw
            ax.plot([xr, xmax], [p, p], color="black", lw=1.0, ls=["--", ":"][i % 2],
                    label=f"compute roof: {p / 1e12:.3g} TFLOP/s\n({how})")
    cmap = plt.get_cmap("tab10")
    ymin = math.inf
    for i, impl in enumerate(impls):
        pts = [(xpos[r["case"]], cases[r["case"]]["flops"] / (r["ms"] * 1e-3), r.get("correct") is not False)
               for r in ok_rows if r["impl"] == impl]
        ymin = min(ymin, min(p[1] for p in pts))
        big = impl.startswith(KFUSE_PREFIX)
        ax.scatter([p[0] for p in pts], [p[1] for p in pts], marker=_MARKERS[i % len(_MARKERS)],
                   s=100 if big else 50, color=cmap(i % 10), edgecolors="black" if big else "none",
                   zorder=3 if big else 2, label=impl, alpha=0.9)
        bad = [p for p in pts if not p[2]]
        if bad:
            ax.scatter([p[0] for p in bad], [p[1] for p in bad], marker="x", s=160, color="red", zorder=4)
    if any(r.get("correct") is False for r in ok_rows):
        ax.scatter([], [], marker="x", s=100, color="red", label="wrong result (rel. err > tolerance)")
    for label, c in cases.items():   # each workload named once, above its highest point
        ys = [c["flops"] / (r["ms"] * 1e-3) for r in ok_rows if r["case"] == label]
        if ys:
            ax.annotate(label, (xpos[label], max(ys)), textcoords="offset points", xytext=(0, 9),
                        ha="center", fontsize=8, color="dimgray")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(xmin, xmax)
    if math.isfinite(ymin):
        ax.set_ylim(ymin / 5, max([p for p, _ in peaks] + [ymin * 10]) * 3)
    ax.set_xlabel("arithmetic intensity (FLOP per byte of minimal memory traffic: inputs read once, outputs written once)",
                  fontsize=9)
    ax.set_ylabel("achieved FLOP/s")
    di = m["device_info"]
    ax.set_title(f"kfuse bench roofline — {m['device'].upper()}: {di.get('name', '?')}\n{m['date']}, public suite "
                 f"P1–P6 ({m['size']} sizes); roofs measured in the same run", fontsize=10)
    ax.grid(True, which="both", alpha=0.25)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), framealpha=0.92,
              title="roofs and implementations", title_fontsize=8)
    fig.tight_layout()
    _mkdir(path)
    fig.savefig(path)
    plt.close(fig)


# ---- benchmarks/RESULTS.md ---------------------------------------------------------------------
_HEADER = """# kfuse benchmark results

Written by `kfuse bench --results benchmarks/RESULTS.md` (see `benchmarks/README.md`): the latest
GPU run and the latest CPU run of the public suite (P1–P6, issue 9), each with its roofline plot.
Each section is replaced as a whole by the next run on that kind of device.
"""


def _markers(kind: str) -> tuple[str, str]:
    return f"<!-- kfuse-bench:{kind}:begin -->", f"<!-- kfuse-bench:{kind}:end -->"


def update_results(result: dict, path: str, plot_path: str | None) -> None:
    """Replace (or add) this run's device section of RESULTS.md; other sections stay as they are."""
    kind = result["meta"]["device"]
    text = open(path).read() if os.path.exists(path) else _HEADER
    for k in ("gpu", "cpu"):  # both sections exist, GPU first
        b, e = _markers(k)
        if b not in text:
            text = text.rstrip() + f"\n\n{b}\n## {k.upper()} run\n\n_not run yet_\n{e}\n"
    rel = os.path.relpath(plot_path, os.path.dirname(os.path.abspath(path))) if plot_path else None
    body = markdown(result, rel, heading="##")
    body = body.replace(f"## kfuse bench — {kind.upper()} run,", f"## {kind.upper()} run —", 1)
    b, e = _markers(kind)
    text = re.sub(re.escape(b) + r".*?" + re.escape(e), lambda _m: f"{b}\n{body.rstrip()}\n{e}", text,
                  flags=re.S)
    _mkdir(path)
    with open(path, "w") as f:
        f.write(text)
