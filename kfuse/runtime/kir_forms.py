"""Kernel IR at new sizes without lowering: a program's kernel IRs seen at two sizes (the call's
and the probe's, ``ir.size_forms``) with equal ``shape_class.normal_form`` differ only in their
size values (``SizeParam.value``, the buffers' informational shapes); :class:`KirForms` holds
those as size forms and writes the kernel IRs at other sizes (what ``lower_group`` would give
for the same plan there, as its code is the same)."""
from __future__ import annotations

import dataclasses

from ..codegen import kernel_ir as K
from ..ir.size_forms import learn_site, value


def _sites(kir: K.KernelIR) -> list[int]:
    """The integers of a kernel IR that follow the sizes, in a fixed order."""
    out = [s.value for s in kir.sizes]
    for b in (*kir.inputs, *kir.outputs):
        out += b.shape
    return out


class KirForms:
    """The size forms of a program's kernel IRs (see the module docstring)."""

    __slots__ = ("kirs", "forms")

    def __init__(self, kirs: tuple, forms: tuple):
        self.kirs, self.forms = kirs, forms

    @classmethod
    def learn(cls, kirs: tuple, probe_kirs: tuple, sizes: tuple, probe: tuple) -> "KirForms | None":
        """From ``kirs`` at ``sizes`` and the same plan's ``probe_kirs`` at ``probe`` (equal but
        for size values: the caller checked their normal forms), or None where a size value is
        no monomial of the sizes."""
        forms = []
        for a, b in zip(kirs, probe_kirs):
            sa, sb = _sites(a), _sites(b)
            if len(sa) != len(sb):
                return None
            f = tuple(learn_site(x, y, sizes, probe) for x, y in zip(sa, sb))
            if None in f or any(s.__class__ is tuple and s and s[0] in ("lit", "float") for s in f):
                return None
            forms.append(f)
        return cls(tuple(kirs), tuple(forms))

    def at(self, sizes: tuple) -> tuple:
        """The kernel IRs at the class values ``sizes``."""
        out = []
        for kir, f in zip(self.kirs, self.forms):
            vals = [s if s.__class__ is int else value(s, sizes) for s in f]
            k = len(kir.sizes)
            params = tuple([K.SizeParam(p.name, vals[i], p.what) for i, p in enumerate(kir.sizes)])
            bufs = []
            for b in (*kir.inputs, *kir.outputs):
                bufs.append(dataclasses.replace(b, shape=tuple(vals[k:k + len(b.shape)])))
                k += len(b.shape)
            n = len(kir.inputs)
            out.append(dataclasses.replace(kir, sizes=params, inputs=tuple(bufs[:n]), outputs=tuple(bufs[n:])))
        return tuple(out)
