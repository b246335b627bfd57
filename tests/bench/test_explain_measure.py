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


def test_a_matmul_groups_product_counts_in_its_kernel_time(monkeypatch):
    """The CPU matmul group's prediction prices its BLAS product and epilogue: the measured time
    holds both (a product made 20 ms slower shows in the group's kernel time, not in other_us)."""
    import time

    import numpy as np

    from kfuse.runtime import cpu as cpu_runtime
    real = cpu_runtime.matmul

    def slow(*a):
        time.sleep(0.02)
        return real(*a)
    monkeypatch.setattr(cpu_runtime, "matmul", slow)
    x, w = np.ones((8, 4), np.float32), np.ones((4, 3), np.float32)
    rep = kernel_timing.measure_kernels(lambda x, w: np.maximum(x @ w + 1.0, 0.0), x, w, device="cpu", reps=3)
    (k,) = rep["kernels"]
    assert k["kind"] == "matmul" and k["measured_us"] >= 20000 and rep["other_us"] < 20000
    assert cpu_runtime.matmul is slow                   # (restored after the measured calls)
