"""``kfuse explain --measure`` measures where the plan runs: on the GPU for a GPU device or a GPU
backend named without a device (it measured host arrays on the CPU before), on the host otherwise."""
import pytest

from kfuse.bench import kernel_timing


@pytest.mark.parametrize("device,backend,gpu,runs_on", [
    (None, None, False, None), ("cpu", None, False, None), ("h200", None, True, None),
    (None, "cuda", True, "cuda"), (None, "numba-cuda", True, "numba-cuda"), (None, "auto", False, None),
    ("cpu", "cuda", False, "cuda")])
def test_where_it_measures(monkeypatch, device, backend, gpu, runs_on):
    seen = {}
    monkeypatch.setattr(kernel_timing, "random_arguments", lambda specs, on_gpu: seen.update(gpu=on_gpu) or [])
    monkeypatch.setattr(kernel_timing, "measure_kernels",
                        lambda fn, *a, device=None, backend=None: seen.update(backend=backend) or {})
    monkeypatch.setattr(kernel_timing, "format_measured", lambda r: "")
    kernel_timing.explain_measure_text(lambda x: x, ["f32[4]"], device=device, backend=backend)
    assert seen == {"gpu": gpu, "backend": runs_on}
