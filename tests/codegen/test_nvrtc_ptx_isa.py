"""The PTX ISA a dump is written for (``kfuse.codegen.nvrtc``): the newest that both NVRTC and the
installed driver (or, without one, the ``ptxas`` on PATH) accept, or the one asked for."""
import pytest

from kfuse.codegen import nvrtc


def test_cuda_to_isa_table():
    assert nvrtc.isa_of_cuda((12, 0)) == (8, 0)
    assert nvrtc.isa_of_cuda((12, 6)) == (8, 5)
    assert nvrtc.isa_of_cuda((12, 8)) == (8, 7)
    assert nvrtc.isa_of_cuda((13, 0)) == (9, 0)
    assert nvrtc.isa_of_cuda((13, 5)) == (9, 5)     # NVRTC 13.5 writes 9.5
    assert nvrtc.isa_of_cuda((12, 7)) == (8, 5)     # no such release: the one below it


def test_default_target_prefers_the_driver(monkeypatch):
    monkeypatch.setattr(nvrtc, "driver_cuda_version", lambda: (13, 0))
    monkeypatch.setattr(nvrtc, "ptxas_cuda_version", lambda: (13, 5))
    t = nvrtc.default_ptx_target((9, 5))
    assert t.isa == (9, 0) and "driver" in t.reason
    monkeypatch.setattr(nvrtc, "driver_cuda_version", lambda: None)
    assert nvrtc.default_ptx_target((9, 5)).isa == (9, 5)           # ptxas 13.5 reads NVRTC's own
    monkeypatch.setattr(nvrtc, "ptxas_cuda_version", lambda: (12, 8))
    t = nvrtc.default_ptx_target((9, 5))
    assert t.isa == (8, 7) and "ptxas 12.8" in t.reason
    monkeypatch.setattr(nvrtc, "ptxas_cuda_version", lambda: None)
    assert nvrtc.default_ptx_target((9, 5)).isa == (9, 5)


def test_with_ptx_isa_lowers_only():
    ptx = "//\n.version 9.5\n.target sm_90\n.address_size 64\n"
    assert ".version 9.0\n" in nvrtc.with_ptx_isa(ptx, "9.0")
    assert nvrtc.with_ptx_isa(ptx, (9, 5)) == ptx
    with pytest.raises(ValueError, match="newer"):
        nvrtc.with_ptx_isa(ptx, "9.9")
    with pytest.raises(ValueError, match="bad PTX ISA"):
        nvrtc.with_ptx_isa(ptx, "nine")


def test_one_module_keeps_one_header():
    a = ".version 9.0\n.target sm_90\n.address_size 64\n.global .align 4 .f32 kf_z;\n.entry k0()\n{\n}\n"
    b = a.replace("k0", "k1")
    merged = nvrtc.one_module([a, b])
    assert merged.count(".version") == 1 and merged.count(".target") == 1
    assert merged.count(".global .align 4 .f32 kf_z;") == 1 and ".entry k1" in merged
