"""The ``kfuse`` command line: argparse front end over the public API (``kfuse.jit``,
``JitFunction.lower(...).as_text(stage)``, ``kfuse.explain``) plus ``demo``, ``bench`` and ``cache``.

Functions are addressed as ``path/to/file.py:func`` (the file is imported as a module by path) and
their arguments by spec strings such as ``'f32[4096,4096]'``, ``'f32[]'``, ``float`` or ``int``
(quoted: the brackets are a glob pattern in zsh and bash); a spec is never allocated, so every dump
works without the memory (and without a GPU).
"""
from __future__ import annotations

import argparse
import ast
import importlib.util
import inspect
import os
import sys
from pathlib import Path
from typing import Any, Callable, Sequence

from . import backends

_STAGES = ("traced", "optimized", "fused", "kernel", *backends.stages())
_BACKENDS = (backends.AUTO, *backends.names())
_PTX_BACKENDS = tuple(n for n in backends.names() if "ptx" in backends.get(n).stages)


class CLIError(Exception):
    """A usage error reported as ``kfuse: error: ...`` with exit status 2 (no traceback)."""


# ---- loading path/file.py:func ----------------------------------------------------------------

def load_function(target: str) -> Any:
    """Import ``path/file.py`` by path and return its attribute ``func`` (dotted names allowed)."""
    path, sep, attr = target.rpartition(":")
    if not sep or not path or not attr:
        raise CLIError(f"expected path/file.py:function, got {target!r}")
    file = Path(path)
    if not file.is_file():
        raise CLIError(f"no such file: {path!r} (in {target!r})")
    file = file.resolve()
    mod_name = "kfuse_cli_" + "".join(c if c.isalnum() else "_" for c in file.stem) + f"_{abs(hash(str(file))):x}"
    module = sys.modules.get(mod_name)
    if module is None:
        spec = importlib.util.spec_from_file_location(mod_name, file)
        if spec is None or spec.loader is None:
            raise CLIError(f"cannot import {path!r} as a Python module")
        module = importlib.util.module_from_spec(spec)
        sys.modules[mod_name] = module
        sys.path.insert(0, str(file.parent))  # so the file can import its neighbours
        try:
            spec.loader.exec_module(module)
        except BaseException:
            sys.modules.pop(mod_name, None)
            raise
        finally:
            try:
                sys.path.remove(str(file.parent))
            except ValueError:
                pass
    obj: Any = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            names = sorted(n for n, v in vars(module).items() if not n.startswith("_") and (
                _is_jit(v) or (inspect.isfunction(v) and v.__module__ == mod_name)))
            hint = f"; functions defined there: {', '.join(names)}" if names else ""
            raise CLIError(f"{path!r} has no function {attr!r}{hint}")
        obj = getattr(obj, part)
    if not callable(obj):
        raise CLIError(f"{target!r} is not a function (it is a {type(obj).__name__})")
    return obj


def _is_jit(obj: Any) -> bool:
    from .api import JitFunction
    return isinstance(obj, JitFunction)


def _jitted(obj: Any, backend: str | None = None):
    """A JitFunction for ``obj``: its own options kept (backend replaced if given), or a new one."""
    import dataclasses

    import kfuse
    from .api import JitFunction
    if isinstance(obj, JitFunction):
        if backend is None or backend == obj.options.backend:
            return obj
        return JitFunction(obj.fn, dataclasses.replace(obj.options, backend=backend))
    return kfuse.jit(obj, backend=backend or "auto")


# ---- argument specs --------------------------------------------------------------------------

def parse_specs(tokens: Sequence[str], fn: Callable) -> tuple[list[Any], dict[str, Any]]:
    """Check every spec; ``name=spec`` is a keyword argument. A parameter listed in the function's
    ``static_argnames`` takes a Python literal (``3``, ``'tanh'``, ``(1, 2)``) instead of a spec."""
    from .ir.specs import spec_from_string
    jf = fn if _is_jit(fn) else None
    raw = jf.fn if jf is not None else fn
    static = set(jf.options.static_argnames) if jf is not None else set()
    try:
        params = list(inspect.signature(raw).parameters.values())
    except (TypeError, ValueError):
        params = []
    positional_names = [p.name for p in params
                        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    args: list[Any] = []
    kwargs: dict[str, Any] = {}
    for i, tok in enumerate(tokens):
        name, eq, value = tok.partition("=")
        if eq and name.isidentifier():
            target_name, text = name, value
        else:
            target_name, text = (positional_names[i] if i < len(positional_names) else None), tok
        if target_name in static:
            try:
                val = ast.literal_eval(text)
            except (ValueError, SyntaxError):
                val = text  # a bare word for a static string argument
        else:
            try:
                spec_from_string(text)
            except ValueError as e:
                where = f" for argument {target_name!r}" if target_name else ""
                raise CLIError(f"{e}{where}") from None
            val = text
        if eq and name.isidentifier():
            kwargs[name] = val
        else:
            args.append(val)
    if params and not any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params):
        required = [p.name for p in params if p.default is p.empty and p.name not in kwargs]
        fname = getattr(raw, "__name__", "function")
        if len(args) > len(positional_names):
            raise CLIError(f"{fname} takes {len(positional_names)} argument(s) "
                           f"({', '.join(positional_names)}), got {len(args)} specs")
        missing = [n for n in required if n not in positional_names[:len(args)]]
        if missing:
            raise CLIError(f"{fname}({', '.join(p.name for p in params)}): no spec for "
                           f"{', '.join(missing)}; give one spec per argument, e.g. 'f32[1024,1024]' float")
    return args, kwargs


# ---- subcommands -------------------------------------------------------------------------------

def _write_or_print(text: str, out: str | None) -> None:
    if out:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        Path(out).write_text(text if text.endswith("\n") else text + "\n")
        print(f"wrote {out}", file=sys.stderr)
    else:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")


def _default_backend(stage: str, requested: str | None) -> str | None:
    """The backend a stage is lowered for: the requested one; for a GPU stage (``cuda``,
    ``numba``, ``ptx``) the first backend printing it, whose plan is made for a GPU; else the
    function's own."""
    if requested is not None:
        return requested
    b = backends.for_stage(stage)
    return b.name if b is not None and not b.on_host else None


def _lower_text(target: str, specs: Sequence[str], stage: str, backend: str | None,
                device: str | None = None, arch: str | None = None, ptx_isa: str | None = None) -> str:
    fn = load_function(target)
    args, kwargs = parse_specs(specs, fn)
    jf = _jitted(fn, _default_backend(stage, backend))
    lowered = jf.lower(*args, device=device, **kwargs)
    if stage == "ptx":
        return lowered.ptx(arch or "sm_90", ptx_isa)   # NVRTC or numba-cuda per backend; no GPU needed
    return lowered.as_text(stage)


def _cmd_dump(args) -> int:
    stage = args.stage
    text = _lower_text(args.target, args.specs, stage, args.backend, device=args.device)
    _write_or_print(text, args.output)
    return 0


def _cmd_dump_cuda(args) -> int:
    text = _lower_text(args.target, args.specs, "cuda", args.backend or "cuda", device=args.device)
    _write_or_print(text, args.output)
    return 0


def _cmd_dump_ptx(args) -> int:
    text = _lower_text(args.target, args.specs, "ptx", args.backend, device=args.device, arch=args.arch,
                       ptx_isa=args.ptx_isa)
    _write_or_print(text, args.output)
    return 0


def _cmd_explain(args) -> int:
    import kfuse
    fn = load_function(args.target)
    a, kw = parse_specs(args.specs, fn)
    plan = kfuse.explain(_jitted(fn, args.backend), *a, device=args.device, **kw)
    text = str(plan)
    if getattr(args, "measure", False):     # random inputs of the specs, each kernel timed
        from .bench.kernel_timing import explain_measure_text
        text += "\n" + explain_measure_text(fn, a, device=args.device, backend=args.backend)
    _write_or_print(text, args.output)
    return 0


def _cmd_demo(args) -> int:
    from .demo import run_demo
    return run_demo(device=args.device, out_dir=args.out, quick=args.quick)


def _call_main(module, argv: list[str]) -> int:
    main = getattr(module, "main", None)
    if main is None:
        raise CLIError(f"{module.__name__} has no main()")
    try:
        rc = main(argv)
    except SystemExit as e:
        return int(e.code or 0) if not isinstance(e.code, str) else 1
    return int(rc or 0)


def _passthrough(module_name: str):
    """A subcommand whose arguments all belong to another module's ``main(argv)``."""
    def run(args) -> int:
        import importlib
        argv = list(args.rest)
        if argv[:1] == ["--"]:
            argv = argv[1:]
        return _call_main(importlib.import_module(module_name), argv)
    return run


PASSTHROUGH = {  # subcommand -> (module with main(argv), help)
    "bench": ("kfuse.bench.cli", "run the public benchmark suite against NumPy, CuPy, torch.compile, jax.jit"),
    "tune": ("kfuse.autotune.cli", "autotune a function's kernels for argument specs and store the result"),
    "fuzz": ("kfuse.fuzz.cli", "differential fuzzing against NumPy"),
}


def _add_cache(sub) -> None:
    try:
        from . import cache_cli
    except Exception as e:  # not written yet, or broken: say so when it is used
        err = f"{type(e).__name__}: {e}"
        p = sub.add_parser("cache", help="inspect and manage the kernel cache (unavailable)")
        p.add_argument("rest", nargs=argparse.REMAINDER)

        def unavailable(args, err=err) -> int:
            raise CLIError(f"`kfuse cache` is not available in this build ({err})")
        p.set_defaults(func=unavailable)
        return
    before = set(sub.choices)
    cache_cli.add_subparser(sub)
    for name in set(sub.choices) - before or {"cache"}:
        if name in sub.choices:
            sub.choices[name].set_defaults(func=cache_cli.run)


def build_parser() -> argparse.ArgumentParser:
    import kfuse
    parser = argparse.ArgumentParser(
        prog="kfuse",
        description="kfuse: a JIT kernel-fusion compiler for NumPy-style Python. "
                    "Functions are given as path/file.py:func, arguments as specs such as "
                    "'f32[4096,4096]' 'f32[4096]' float int (nothing is allocated; quote the "
                    "specs with brackets, which zsh and bash read as glob patterns).")
    parser.add_argument("--version", action="version", version=f"kfuse {kfuse.__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    def target_parser(name, help_, **kw):
        p = sub.add_parser(name, help=help_, description=help_, **kw)
        p.add_argument("target", metavar="path/file.py:func", help="the function to compile")
        p.add_argument("specs", nargs="*", metavar="SPEC",
                       help="one per argument, quoted: 'f32[1024,1024]', 'f32[]' (0-d), float, int, "
                            "bool; name=SPEC for a keyword; a Python literal for a static argument")
        p.add_argument("-o", "--output", metavar="FILE", help="write to FILE instead of stdout")
        p.add_argument("--device", default=None,
                       help="device the plan is made for (e.g. h100, h200, cpu); default: the backend's")
        return p

    p = target_parser("dump-ir", "print one compilation stage of a function")
    p.add_argument("--stage", choices=_STAGES, default="fused", help="stage to print (default: fused)")
    p.add_argument("--backend", choices=_BACKENDS, default=None,
                   help="backend to lower for (default: cuda for the cuda/ptx stages, else the function's)")
    p.set_defaults(func=_cmd_dump)

    p = target_parser("dump-cuda", "print the CUDA C of a function's kernels (no GPU needed)")
    p.add_argument("--backend", choices=("cuda",), default="cuda", help=argparse.SUPPRESS)
    p.set_defaults(func=_cmd_dump_cuda)

    p = target_parser("dump-ptx", "print the PTX of a function's kernels (NVRTC; no GPU needed)")
    p.add_argument("--arch", default="sm_90", help="target architecture (default: sm_90)")
    p.add_argument("--ptx-isa", default=None, metavar="X.Y",
                   help="PTX ISA to write (e.g. 9.0; default: the newest that both NVRTC and the installed "
                        "driver, or without one the ptxas on PATH, accept)")
    p.add_argument("--backend", choices=_PTX_BACKENDS, default=_PTX_BACKENDS[0],
                   help="code generator whose PTX to print (default: cuda)")
    p.set_defaults(func=_cmd_dump_ptx)

    p = target_parser("explain", "print the fusion plan: kernels, bytes, FLOPs, predicted time, refusals")
    p.add_argument("--measure", action="store_true",
                   help="also run it on random inputs of the specs (CuPy arrays for a GPU device or a GPU "
                        "backend, else host arrays) and print each kernel's measured time beside its "
                        "predicted one")
    p.add_argument("--backend", choices=_BACKENDS, default=None,
                   help="backend to plan for (default: the function's); a kernel the backend cannot run is "
                        "listed as refused")
    p.set_defaults(func=_cmd_explain)

    p = sub.add_parser("demo", help="compile the example workloads on the best device, check them "
                                    "against NumPy, print plans and speed-ups, write all dumps",
                       description="Compile the example workloads on the best device present (GPU if "
                                   "there is one, else CPU), check each against NumPy, print its fused "
                                   "plan and speed-up, and write IR/kernel/CPU/CUDA/PTX dumps to --out.")
    p.add_argument("--device", choices=("auto", "cpu", "gpu"), default="auto")
    p.add_argument("--out", default="kfuse-demo", metavar="DIR", help="folder for the dumps (default: kfuse-demo)")
    p.add_argument("--quick", action="store_true", help="tiny sizes, one repetition (for tests)")
    p.set_defaults(func=_cmd_demo)

    for name, (module, help_) in PASSTHROUGH.items():
        p = sub.add_parser(name, help=help_, add_help=False,
                           description=f"{help_}; `kfuse {name} --help` lists its options.")
        p.add_argument("rest", nargs=argparse.REMAINDER, metavar="ARGS")
        p.set_defaults(func=_passthrough(module))

    _add_cache(sub)
    return parser


def _message(e: BaseException) -> str:
    """The exception's text without the ``kfuse: `` its message starts with (the CLI says it once)."""
    text = str(e)
    return text[len("kfuse: "):] if text.startswith("kfuse: ") else text


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``kfuse`` console script; returns the exit status."""
    from .errors import KfuseError
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    if argv and argv[0] in PASSTHROUGH:  # every argument after it belongs to that module, flags too
        args = argparse.Namespace(command=argv[0], rest=argv[1:],
                                  func=_passthrough(PASSTHROUGH[argv[0]][0]))
    else:
        args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except CLIError as e:
        print(f"kfuse: error: {_message(e)}", file=sys.stderr)
        return 2
    except (KfuseError, ValueError, TypeError) as e:
        from . import config
        if config.get().debug:
            raise
        kind = "" if isinstance(e, KfuseError) else f"{type(e).__name__}: "
        print(f"kfuse: error: {kind}{_message(e)}", file=sys.stderr)
        if not isinstance(e, KfuseError):
            print("(set KFUSE_DEBUG=1 for the traceback)", file=sys.stderr)
        return 1
    except BrokenPipeError:  # `kfuse dump-ir ... | head`
        try:
            sys.stdout = open(os.devnull, "w")
        except OSError:
            pass
        return 0


if __name__ == "__main__":
    sys.exit(main())
