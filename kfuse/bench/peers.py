"""The implementations the suite compares, each used only when it imports and runs here.

CPU: NumPy eager, PyTorch eager, ``torch.compile``, ``jax.jit``, kfuse (backend ``cpu``).
GPU: CuPy eager, ``cupy.fuse``, PyTorch eager, ``torch.compile``, ``jax.jit``, kfuse
(backends ``cuda`` and ``numba-cuda``).

A :class:`Peer` knows how to move NumPy inputs to its device, build the workload's function (one
NumPy-style body per workload, see ``workloads.py``), wait for results, bring a slice of the
outputs back to the host, time itself (CUDA events, grouped wall-clock, or perf_counter), and
give its memory back. Anything that fails is reported as that peer's error for that row, never
as a failure of the suite.
"""
from __future__ import annotations

import importlib
import re
from typing import Any, Callable

import numpy as np

from . import timing
from .workloads import Case, TorchNamespace


class PeerUnavailable(Exception):
    """This peer cannot run here (not installed, no device); the message says why."""


class Peer:
    key = "?"            # id for --peers (numpy, cupy, cupy.fuse, torch, torch.compile, jax, kfuse)
    name = "?"           # display name
    device = "cpu"
    compiles = False     # has a compile step worth reporting
    slow_compile = False  # compile may take tens of seconds (skipped first when over budget)

    def setup(self) -> None:
        """Import what is needed; raise :class:`PeerUnavailable` with the reason."""

    def version(self) -> str:
        return ""

    def build(self, case: Case) -> Callable:
        raise NotImplementedError

    def put(self, a: np.ndarray):
        return a

    def get(self, out, rows: int) -> np.ndarray:
        return np.asarray(out[:rows])

    def block(self, out) -> None:
        return None

    def sync(self) -> None:
        return None

    def free(self) -> None:
        return None

    def measure(self, call: Callable[[int], Any], **kw) -> timing.Timing:
        return timing.time_cpu(call, block=self.block, **kw)


def _import(name: str):
    try:
        return importlib.import_module(name)
    except Exception as e:  # ImportError, or a broken install raising anything at import
        raise PeerUnavailable(f"{name} does not import: {type(e).__name__}: {e}".splitlines()[0]) from None


# ---- CPU ---------------------------------------------------------------------------------------
class NumpyPeer(Peer):
    key = name = "numpy"

    def version(self):
        return np.__version__

    def build(self, case):
        return case.body(np)


# ---- CuPy --------------------------------------------------------------------------------------
class CupyPeer(Peer):
    key = name = "cupy"
    device = "gpu"

    def setup(self):
        self.cp = _import("cupy")
        try:
            if self.cp.cuda.runtime.getDeviceCount() < 1:
                raise PeerUnavailable("cupy sees no GPU")
        except PeerUnavailable:
            raise
        except Exception as e:
            raise PeerUnavailable(f"cupy sees no GPU: {e}".splitlines()[0]) from None
        self.events = timing.EventAPI.cupy()

    def version(self):
        return self.cp.__version__

    def build(self, case):
        return case.body(self.cp)

    def put(self, a):
        return self.cp.asarray(a)

    def get(self, out, rows):
        return self.cp.asnumpy(out[:rows])

    def sync(self):
        self.cp.cuda.get_current_stream().synchronize()

    def block(self, out):
        self.sync()

    def free(self):
        self.sync()
        self.cp.get_default_memory_pool().free_all_blocks()

    def measure(self, call, **kw):
        return timing.time_events(call, self.events, **kw)


class CupyFusePeer(CupyPeer):
    key = name = "cupy.fuse"
    compiles = True

    def build(self, case):
        return self.cp.fuse(kernel_name=case.workload.name.lower())(case.body(self.cp))


# ---- PyTorch -----------------------------------------------------------------------------------
class TorchPeer(Peer):
    key = "torch"
    slow_compile = False

    def __init__(self, device: str = "cpu", compiled: bool = False):
        self.device = device
        self.compiled = compiled
        self.key = "torch.compile" if compiled else "torch"
        self.name = self.key
        self.compiles = compiled
        self.slow_compile = compiled

    def setup(self):
        self.torch = _import("torch")
        if self.device == "gpu":
            if not self.torch.cuda.is_available():
                raise PeerUnavailable("torch sees no CUDA device")
            self.events = timing.EventAPI.torch()
            self.tdev = "cuda"
        else:
            self.tdev = "cpu"
        if self.compiled:
            try:
                import torch._dynamo  # noqa: F401
                self.torch._dynamo.config.cache_size_limit = 64
            except Exception:
                pass

    def version(self):
        return self.torch.__version__

    def build(self, case):
        fn = case.body(TorchNamespace(self.torch))
        if self.compiled:
            fn = self.torch.compile(fn)
        torch = self.torch

        def run(*args):
            with torch.no_grad():
                return fn(*args)
        return run

    def put(self, a):
        t = self.torch.from_numpy(np.ascontiguousarray(a))
        return t.to(self.tdev) if self.tdev != "cpu" else t

    def get(self, out, rows):
        return out[:rows].detach().to("cpu").numpy()

    def sync(self):
        if self.tdev == "cuda":
            self.torch.cuda.synchronize()

    def block(self, out):
        self.sync()

    def free(self):
        if self.tdev == "cuda":
            self.torch.cuda.synchronize()
            self.torch.cuda.empty_cache()

    def measure(self, call, **kw):
        if self.tdev == "cuda":
            return timing.time_events(call, self.events, **kw)
        return timing.time_cpu(call, **kw)


# ---- JAX ---------------------------------------------------------------------------------------
class JaxPeer(Peer):
    key = name = "jax.jit"
    compiles = True

    def __init__(self, device: str = "cpu"):
        self.device = device

    def setup(self):
        self.jax = _import("jax")
        self.jnp = _import("jax.numpy")
        platform = "gpu" if self.device == "gpu" else "cpu"
        try:
            devs = self.jax.devices(platform)
        except Exception as e:
            raise PeerUnavailable(f"jax has no {platform} device: {e}".splitlines()[0]) from None
        if not devs:
            raise PeerUnavailable(f"jax has no {platform} device")
        self.jdev = devs[0]

    def version(self):
        return self.jax.__version__

    def build(self, case):
        return self.jax.jit(case.body(self.jnp))

    def put(self, a):
        return self.jax.device_put(a, self.jdev)

    def get(self, out, rows):
        return np.asarray(out[:rows])

    def block(self, out):
        self.jax.block_until_ready(out)

    def measure(self, call, **kw):
        if self.device == "gpu":
            return timing.time_grouped(call, self.block, **kw)
        return timing.time_cpu(call, block=self.block, **kw)

    def free(self):
        try:
            self.jax.clear_caches()
        except Exception:
            pass


# ---- kfuse -------------------------------------------------------------------------------------
class KfusePeer(Peer):
    key = "kfuse"
    compiles = True

    def __init__(self, backend: str = "cpu", autotune: str | None = None):
        self.backend = backend
        self.autotune = autotune
        from kfuse import backends
        self.device = "cpu" if backends.get(backend).on_host else "gpu"
        self.name = f"kfuse[{backend}{',tuned' if autotune == 'on' else ''}]"

    def setup(self):
        self.kfuse = _import("kfuse")
        for mod in ("kfuse.trace", "kfuse.fusion.pipeline"):
            _import(mod)
        from kfuse import backends
        for mod in backends.get(self.backend).imports:      # its runtime and toolchain, loaded before timing
            _import(mod)
        if self.device == "gpu":
            self.cp = _import("cupy")
            try:
                ok = self.cp.cuda.runtime.getDeviceCount() > 0
            except Exception:
                ok = False
            if not ok:
                raise PeerUnavailable("no GPU for kfuse's GPU backends")
            self.events = timing.EventAPI.cupy()
        self.warmup_s = warm_up_kfuse(self.kfuse, self.backend, self.cp if self.device == "gpu" else None)

    def version(self):
        return getattr(self.kfuse, "__version__", "")

    def build(self, case):
        kw = {"backend": self.backend}
        if self.autotune:
            kw["autotune"] = self.autotune
        return self.kfuse.jit(case.body(np), **kw)

    def put(self, a):
        return self.cp.asarray(a) if self.device == "gpu" else a

    def get(self, out, rows):
        if self.device == "gpu":
            return self.cp.asnumpy(out[:rows])
        return np.asarray(out[:rows])

    def sync(self):
        if self.device == "gpu":
            self.cp.cuda.get_current_stream().synchronize()

    def block(self, out):
        self.sync()

    def free(self):
        if self.device == "gpu":
            self.sync()
            self.cp.get_default_memory_pool().free_all_blocks()

    def measure(self, call, **kw):
        if self.device == "gpu":
            return timing.time_events(call, self.events, **kw)
        return timing.time_cpu(call, **kw)


def warm_up_kfuse(kfuse, backend: str, cp=None) -> float:
    """Compile and run one unrelated tiny function, so that one-time process costs (imports of the
    code generators, Numba/NVRTC start-up, threading layer) are not charged to the first workload's
    compile time. Returns the seconds it took."""
    import time
    t0 = time.perf_counter()

    def kfuse_bench_warmup(x):
        return x * 2.0 + 1.0
    x = np.arange(64, dtype=np.float32)
    if cp is not None:
        x = cp.asarray(x)
    kfuse.jit(kfuse_bench_warmup, backend=backend)(x)
    if cp is not None:
        cp.cuda.get_current_stream().synchronize()
    return time.perf_counter() - t0


def all_peers(device: str, *, tune: bool = False) -> list[Peer]:
    """Every peer the suite knows for ``device``, kfuse first (availability checked later)."""
    if device == "cpu":
        peers: list[Peer] = [KfusePeer("cpu")]
        if tune:
            peers.append(KfusePeer("cpu", autotune="on"))
        return peers + [NumpyPeer(), TorchPeer("cpu"), TorchPeer("cpu", compiled=True), JaxPeer("cpu")]
    peers = [KfusePeer("cuda"), KfusePeer("numba-cuda")]
    if tune:
        peers.append(KfusePeer("cuda", autotune="on"))
    return peers + [TorchPeer("gpu", compiled=True), CupyPeer(), CupyFusePeer(), TorchPeer("gpu"),
                    JaxPeer("gpu")]


def select(peers: list[Peer], wanted: str | None) -> list[Peer]:
    """Filter by a comma list of keys or names (``numpy,kfuse``), in the list's order (the order the
    suite builds the peers and gives them device memory in); None keeps all, in the default order."""
    if not wanted:
        return peers
    keys = [w.strip() for w in re.split(r",(?![^\[]*\])", wanted) if w.strip()]   # kfuse[cuda,tuned] is one name
    return list(dict.fromkeys(p for k in keys for p in peers if k in (p.key, p.name)))


def kfuse_predicted_ms(fn, case: Case, device_name: str | None) -> tuple[float | None, str]:
    """The planner's predicted time (sum over kernels, ms) and the plan's text, from ``kfuse.explain``.

    Looks for a predicted-time attribute on each ``plan.groups[i].cost``; returns (None, text) when
    the cost model does not provide one (or (None, reason) when planning fails)."""
    try:
        import kfuse
        from kfuse.ir.dtypes import format_spec
        specs = [format_spec(case.dtype, s) for s in case.shapes]
        plan = kfuse.explain(fn, *specs, device=device_name)
    except Exception as e:
        return None, f"explain failed: {type(e).__name__}: {e}".splitlines()[0]
    total, found = 0.0, False
    for g in getattr(plan, "groups", ()):
        t = _predicted_seconds(getattr(g, "cost", None))
        if t is not None:
            total += t
            found = True
    text = str(plan)
    return (total * 1e3 if found else None), text


_TIME_ATTRS = (("time_s", 1.0), ("predicted_s", 1.0), ("seconds", 1.0), ("predicted_time", 1.0),
               ("time", 1.0), ("t", 1.0), ("time_ms", 1e-3), ("predicted_ms", 1e-3),
               ("time_us", 1e-6), ("predicted_us", 1e-6))


def _predicted_seconds(cost) -> float | None:
    if cost is None:
        return None
    for attr, scale in _TIME_ATTRS:
        v = getattr(cost, attr, None)
        if callable(v):
            try:
                v = v()
            except Exception:
                v = None
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return float(v) * scale
    return None
