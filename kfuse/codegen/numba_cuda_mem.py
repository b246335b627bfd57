"""Numba-CUDA intrinsics for the memory accesses Python kernels cannot spell: 16-byte vector loads
and stores, typed views of a byte workspace, and a grid-wide barrier.

Imported only by the kernels :mod:`kfuse.codegen.numba_cuda` generates. ``ldv(p, i, n)`` reads the
``n`` elements ``p[i] .. p[i + n - 1]`` as one aligned vector access (``ld.global.v4.f32`` for
four float32), ``stv(p, i, t)`` writes the tuple ``t`` so: an indexed ``CPointer`` read element by
element is a 4-byte access, which kept the Numba-CUDA kernels near a third of the copy bandwidth
(P1 on an H200: 31%). The caller guarantees ``i`` a multiple of ``n`` and the pointer aligned (the
runtime checks the arrays, as for the CUDA C backend's vectors). ``at(ws, byte, dtype)`` is a
``CPointer(dtype)`` at byte ``byte`` of a workspace (the two-stage and grid-synchronised
reductions' partial accumulators). ``grid_arrive(bar)`` adds one to the barrier counter with
release semantics and ``grid_seen(bar)`` reads it with acquire semantics (the CUDA C backend's
``kf_grid_sync``: a cooperative launch, every block resident). ``addr``, ``ldl`` and ``stvp`` serve
peeled rows (``codegen.numba_cuda_peel``): an element's address, a unit read element by element,
a unit written as one vector where a flag says it is aligned, else element by element."""
from __future__ import annotations

from llvmlite import ir
from numba.core import types
from numba.cuda.extending import intrinsic


def _unit_read(ptr, idx, n, loads):
    """The intrinsic's ``(signature, codegen)`` reading ``n`` elements of ``ptr`` from ``idx`` as
    a tuple, ``loads(builder, p, i, lt, count)`` their values; None for other argument types."""
    if not (isinstance(ptr, types.CPointer) and isinstance(n, types.IntegerLiteral)):
        return None
    count = n.literal_value
    sig = types.UniTuple(ptr.dtype, count)(ptr, idx, n)

    def codegen(context, builder, sig, args):
        p, i, _ = args
        vals = loads(builder, p, i, context.get_value_type(ptr.dtype), count)
        return context.make_tuple(builder, sig.return_type, vals)
    return sig, codegen


def _vector_loads(builder, p, i, lt, count) -> list:
    vt = ir.VectorType(lt, count)
    v = builder.load(builder.bitcast(builder.gep(p, [i]), vt.as_pointer()), align=count * _width(lt))
    return [builder.extract_element(v, ir.Constant(ir.IntType(32), k)) for k in range(count)]


def _element_loads(builder, p, i, lt, count) -> list:
    return [builder.load(builder.gep(p, [builder.add(i, ir.Constant(i.type, k))])) for k in range(count)]


@intrinsic
def ldv(typingctx, ptr, idx, n):
    return _unit_read(ptr, idx, n, _vector_loads)


def _width(lt) -> int:
    if isinstance(lt, ir.IntType):
        return lt.width // 8
    return {"half": 2, "float": 4, "double": 8}[str(lt)]


@intrinsic
def stv(typingctx, ptr, idx, vals):
    if not (isinstance(ptr, types.CPointer) and isinstance(vals, types.BaseTuple)):
        return None
    count = len(vals)
    sig = types.void(ptr, idx, vals)

    def codegen(context, builder, sig, args):
        p, i, t = args
        lt = context.get_value_type(ptr.dtype)
        vt = ir.VectorType(lt, count)
        v = ir.Constant(vt, ir.Undefined)
        for k in range(count):
            x = builder.extract_value(t, k)
            v = builder.insert_element(v, context.cast(builder, x, vals[k], ptr.dtype), ir.Constant(ir.IntType(32), k))
        builder.store(v, builder.bitcast(builder.gep(p, [i]), vt.as_pointer()), align=count * _width(lt))
        return context.get_dummy_value()
    return sig, codegen


@intrinsic
def at(typingctx, ws, byte, dtype):
    if not (isinstance(ws, types.CPointer) and isinstance(dtype, types.NumberClass)):     # (T.float64, ...)
        return None
    sig = types.CPointer(dtype.instance_type)(ws, byte, dtype)

    def codegen(context, builder, sig, args):
        p = builder.gep(builder.bitcast(args[0], ir.IntType(8).as_pointer()), [args[1]])
        return builder.bitcast(p, context.get_value_type(sig.return_type))
    return sig, codegen


@intrinsic
def grid_arrive(typingctx, bar):
    if not (isinstance(bar, types.CPointer) and bar.dtype == types.uint32):
        return None

    def codegen(context, builder, sig, args):
        builder.asm(ir.FunctionType(ir.VoidType(), [ir.IntType(32).as_pointer()]),
                    "red.release.gpu.global.add.u32 [$0], 1;", "l,~{memory}", [args[0]], True)
        return context.get_dummy_value()
    return types.void(bar), codegen


@intrinsic
def grid_seen(typingctx, bar):
    if not (isinstance(bar, types.CPointer) and bar.dtype == types.uint32):
        return None

    def codegen(context, builder, sig, args):
        return builder.asm(ir.FunctionType(ir.IntType(32), [ir.IntType(32).as_pointer()]),
                           "ld.acquire.gpu.global.u32 $0, [$1];", "=r,l,~{memory}", [args[0]], True)
    return types.uint32(bar), codegen


@intrinsic
def addr(typingctx, ptr, idx):
    """The address of ``ptr[idx]`` as an int64 (a peeled row's head: elements to its first
    16-byte aligned one, ``codegen.numba_cuda_peel``)."""
    if not isinstance(ptr, types.CPointer):
        return None

    def codegen(context, builder, sig, args):
        return builder.ptrtoint(builder.gep(args[0], [args[1]]), ir.IntType(64))
    return types.int64(ptr, idx), codegen


@intrinsic
def ldl(typingctx, ptr, idx, n):
    """``ptr[idx] .. ptr[idx + n - 1]`` element by element (a vector unit not 16-byte aligned)."""
    return _unit_read(ptr, idx, n, _element_loads)


@intrinsic
def stvp(typingctx, aligned, ptr, idx, vals):
    """``stv`` where ``aligned`` holds, else the tuple's elements one by one."""
    if not (isinstance(ptr, types.CPointer) and isinstance(vals, types.BaseTuple)):
        return None
    count = len(vals)
    sig = types.void(aligned, ptr, idx, vals)

    def codegen(context, builder, sig, args):
        ok, p, i, t = args
        lt = context.get_value_type(ptr.dtype)
        xs = [context.cast(builder, builder.extract_value(t, k), vals[k], ptr.dtype) for k in range(count)]
        flag = context.cast(builder, ok, sig.args[0], types.boolean)
        with builder.if_else(flag) as (then, otherwise):
            with then:
                vt = ir.VectorType(lt, count)
                v = ir.Constant(vt, ir.Undefined)
                for k, x in enumerate(xs):
                    v = builder.insert_element(v, x, ir.Constant(ir.IntType(32), k))
                builder.store(v, builder.bitcast(builder.gep(p, [i]), vt.as_pointer()), align=count * _width(lt))
            with otherwise:
                for k, x in enumerate(xs):
                    builder.store(x, builder.gep(p, [builder.add(i, ir.Constant(i.type, k))]))
        return context.get_dummy_value()
    return sig, codegen
