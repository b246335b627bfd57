"""What a backend is: a name, the features it has, the arrays it runs on, the stages it prints,
the compilers in its cache keys, how it compiles a plan (through the one kernel store) and how
it is tuned.

Every backend is one :class:`Backend` object in ``kfuse.backends``'s registry. Code outside
``kfuse/backends/`` asks an object (``backend.on_host``, ``Feature.MATMUL in backend.features``,
``backend.compile_plan(plan, store)``), never compares a backend's name.

A feature a backend lacks is found in the plan, before anything compiles: :meth:`Backend.refusals`
gives a :class:`CapabilityRefusal` per kernel it cannot run, ``api.Lowered.plan`` records them in
``Plan.refused`` (``kfuse.explain`` prints them) and :meth:`Backend.compile_plan` raises the first.
"""
from __future__ import annotations

import dataclasses
import enum
from typing import Any

from ..errors import UnsupportedError
from ..fusion.plan import Refusal

_PREFIX = "kfuse: "             # errors say it; a refusal in the plan's text does not


class Feature(enum.Enum):
    """What a backend can do (a plan needing a feature its backend lacks is refused)."""
    FLOAT64 = "float64"                     # float64 arithmetic at full speed and precision
    BFLOAT16 = "bfloat16"                   # bfloat16 arguments (torch CUDA tensors)
    MATMUL = "matmul"                       # contractions (a product plus its fused epilogue)
    GEMM_GENERATED = "generated GEMM"       # a generated GEMM kernel with the epilogue inside
    SCATTER_ATOMICS = "scatter atomics"     # every ufunc.at combine exactly (compare-and-swap)
    SCAN = "scan"                           # cumulative sums and products
    AUTOTUNE = "autotune"                   # launch shapes / threads searched per shape bucket
    COMPLEX = "complex"                     # complex64/complex128 values (read, computed or written)
    ATTENTION = "attention"                 # softmax(q @ k^T) @ v as one kernel (else its three parts)


@dataclasses.dataclass(frozen=True)
class CapabilityRefusal(Refusal):
    """A kernel the plan's backend cannot run: ``reason`` is the error compiling it raises."""
    backend: str = ""


def complex_dtype(group) -> str:
    """The name of a complex dtype some value of ``group`` has (read, computed or written), or ""."""
    for n in group.inputs + group.nodes + group.outputs:
        if n.dtype.kind == "c":
            return n.dtype.name
    return ""


class Backend:
    """One code generator + runtime. Subclasses set the class attributes and the methods marked
    below; instances are immutable singletons (one per registered name)."""

    name: str = ""
    features: frozenset = frozenset()
    on_host: bool = False           # runs on host (NumPy) arrays; else on device arrays
    stages: tuple[str, ...] = ()    # the stages it prints (``Lowered.as_text``): source, then ptx
    source_stage: str = ""          # the stage of its generated source (``render``)
    tools: tuple[str, ...] = ()     # compilers whose versions key its cache (``runtime.keys.TOOLS``)
    default_device: str = "cpu"     # the DeviceSpec a plan is made for when none is named
    imports: tuple[str, ...] = ()   # modules that run it (a benchmark loads them before timing)
    tile_kinds: tuple = ()              # its tuning knobs: the autotune TileConfig kinds it runs

    def __setattr__(self, name, value):
        raise dataclasses.FrozenInstanceError(f"a Backend is immutable (setting {name!r})")

    def __repr__(self) -> str:
        return f"<kfuse backend {self.name}>"

    def __str__(self) -> str:
        return self.name

    # ---- arrays --------------------------------------------------------------------------
    def accepts(self, kind: str | None) -> bool:
        """Whether it runs on arrays of this kind ('numpy', 'torch-cpu', 'cupy', 'torch')."""
        raise NotImplementedError

    def check_available(self) -> None:
        """Raise a clear ``DeviceError`` when its toolchain cannot be imported here."""

    # ---- code ----------------------------------------------------------------------------
    def render(self, kir) -> str:
        """The generated source of one ``KernelIR`` (its ``source_stage``)."""
        raise NotImplementedError

    def ptx(self, kirs, arch: str, ptx_isa: str | None) -> str:
        """One PTX module of ``kirs`` for ``arch`` (GPU backends)."""
        raise UnsupportedError(f"kfuse: the {self.name} backend writes no PTX")

    def toolchain(self, *, include_driver: bool = False) -> dict:
        """The versions that go into its cache keys (``runtime.keys.toolchain_versions``)."""
        from ..runtime.keys import toolchain_versions
        return toolchain_versions(self.tools, include_driver=include_driver)

    # ---- plans ---------------------------------------------------------------------------
    def unsupported(self, plan) -> list[tuple[Any, str]]:
        """``(group, reason)`` for each kernel of ``plan`` it cannot run (default: none)."""
        return []

    def lacking(self, plan) -> list[tuple[Any, str]]:
        """``(group, reason)`` for each kernel of ``plan`` needing a feature it lacks (data: the
        ``features`` set), ahead of its own :meth:`unsupported` ones."""
        if Feature.COMPLEX in self.features:
            return []
        return [(g, self._no_complex(complex_dtype(g))) for g in plan.groups if complex_dtype(g)]

    def _no_complex(self, dtype_name: str) -> str:
        return (f"{_PREFIX}complex numbers ({dtype_name}) are not supported by the {self.name} backend "
                "yet; run on NumPy arrays (the cpu backend)")

    def check_kernel(self, kir) -> None:
        """Raise the UnsupportedError of a kernel needing a feature it lacks (complex values),
        before its source is written (``render``, ``ptx``: never source for values it cannot hold)."""
        if Feature.COMPLEX not in self.features:
            from ..codegen.kernel_ir import uses_dtype
            for name in ("complex64", "complex128"):
                if uses_dtype(kir, name):
                    raise UnsupportedError(self._no_complex(name))

    def refusals(self, plan) -> tuple[CapabilityRefusal, ...]:
        """The kernels of ``plan`` it cannot run, as refusals recorded in the plan."""
        return tuple(CapabilityRefusal(f"kernel {g.id} [{g.kind}] on the {self.name} backend",
                                       why.removeprefix(_PREFIX), backend=self.name)
                     for g, why in self.lacking(plan) + self.unsupported(plan))

    def compile_plan(self, plan, store=None, *, allow_tf32: bool = False):
        """The runnable program of ``plan``; ``store`` is the kernel store
        (``runtime.cache.KernelStore``) or None. A plan it cannot run raises UnsupportedError
        (the reason ``kfuse.explain`` shows) before anything compiles."""
        self.check_available()
        refused = self.refusals(plan)
        if refused:
            raise UnsupportedError(_PREFIX + refused[0].reason)
        return self._compile(plan, store, allow_tf32)

    def _compile(self, plan, store, allow_tf32: bool):
        raise NotImplementedError

