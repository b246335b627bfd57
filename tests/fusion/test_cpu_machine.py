"""This machine's memory levels and compute scale for the CPU cost model (fusion.cpu_machine,
autotune.machine): stored and read back from the cache directory, the CPU device's where the file
exists and the fitted machine's where it does not or cannot be read, the plan priced on them, and
the measurements themselves."""
import json

import numpy as np
import pytest

import kfuse
from kfuse import config
from kfuse.fusion import cost, cpu_cost, cpu_machine

RATES = {"L2": (80e9, 100e9), "L3": (30e9, 60e9), "DRAM": (10e9, 20e9)}


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("KFUSE_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("KFUSE_CPU_MACHINE", "1")
    config.reload()
    cpu_machine.machine.cache_clear()
    yield str(tmp_path)
    monkeypatch.delenv("KFUSE_CACHE_DIR")
    monkeypatch.setenv("KFUSE_CPU_MACHINE", "0")
    config.reload()
    cpu_machine.machine.cache_clear()


def test_fitted_machine_without_a_file(cache_dir):
    assert cpu_machine.machine(cache_dir) is None
    assert cost.get_device_spec("cpu") is cost.DEVICES["cpu"]
    assert cost.get_device_spec(None).levels == cpu_cost.CPU_LEVELS


def test_stored_levels_price_the_plan(cache_dir):
    x = np.zeros((4096, 4096), np.float32)         # 128 MiB in and out: DRAM
    fitted = kfuse.jit(lambda a: a * 2.0 + 1.0).lower(x, device="cpu").plan.groups[0].cost.seconds
    path = cpu_machine.save(cache_dir, RATES)
    doc = json.load(open(path))
    assert doc["schema"] == cpu_machine.SCHEMA and doc["rates"]["DRAM"] == [10e9, 20e9]
    spec = cost.get_device_spec("cpu")
    assert [(lv.name, lv.bandwidth, lv.parallel) for lv in spec.levels] == [
        (n, a, b) for n, (a, b) in RATES.items()]
    assert [lv.reliable for lv in spec.levels] == [lv.reliable for lv in cpu_cost.CPU_LEVELS]
    measured = kfuse.jit(lambda a: a * 2.0 + 1.0).lower(x, device="cpu").plan.groups[0].cost.seconds
    assert measured > 2 * fitted                    # 20 GB/s from DRAM against the fitted 55


@pytest.mark.parametrize("text", ["not json", json.dumps({"schema": "other", "rates": {}}),
                                  json.dumps({"schema": cpu_machine.SCHEMA, "rates": {"L2": [0, 1]}})])
def test_unreadable_file_is_ignored(cache_dir, text):
    cpu_machine.save(cache_dir, RATES)
    path = next(p for p in __import__("os").listdir(cache_dir) if p.startswith("machine-"))
    with open(f"{cache_dir}/{path}", "w") as f:
        f.write(text)
    cpu_machine.machine.cache_clear()
    assert cost.get_device_spec("cpu") is cost.DEVICES["cpu"]


def test_measure_gives_a_rate_per_level():
    rates = cpu_machine.measure(budget_s=0.01)
    assert set(rates) == set(cpu_machine.PROBES) == {lv.name for lv in cpu_cost.CPU_LEVELS}
    # (a parallel call on a busy machine waits for descheduled threads: levels_from keeps the better)
    assert all(1e8 < a < 1e13 and 0 < b < 1e13 for a, b in rates.values()), rates
    assert all(lv.parallel >= lv.bandwidth for lv in cpu_machine.levels_from(rates))


def test_compute_scale_prices_the_compute(cache_dir):
    x = np.zeros((256, 256), np.float32)
    fn = lambda a: np.tanh(np.exp(a))     # noqa: E731
    before = kfuse.jit(fn).lower(x, device="cpu").plan.groups[0].cost
    cpu_machine.save(cache_dir, {lv.name: (lv.bandwidth, lv.parallel) for lv in cpu_cost.CPU_LEVELS}, 2.0)
    spec = cost.get_device_spec("cpu")
    assert spec.cpu.vector_special == 2 * cpu_cost.CPU_COSTS.vector_special
    assert spec.cpu.call == cpu_cost.CPU_COSTS.call
    assert [lv.bandwidth for lv in spec.levels] == [lv.bandwidth for lv in cpu_cost.CPU_LEVELS]
    after = kfuse.jit(fn).lower(x, device="cpu").plan.groups[0].cost
    assert 1.5 * before.compute_seconds < after.compute_seconds <= 2 * before.compute_seconds   # (mostly exp, tanh)
    assert after.memory_seconds == pytest.approx(before.memory_seconds)


def test_compute_scale_measured_against_the_price():
    """The probe kernels' time over their priced compute: a positive ratio, within the clamp."""
    from kfuse.autotune import machine
    s = machine.compute_scale(cpu_cost.CPU_LEVELS, budget_s=0.05)
    assert machine.SCALE_RANGE[0] <= s <= machine.SCALE_RANGE[1]


def test_tune_machine_cli(cache_dir, capsys):
    from kfuse.autotune import cli, machine
    import unittest.mock as um
    with um.patch.object(cpu_machine, "measure", return_value=RATES), \
            um.patch.object(machine, "compute_scale", return_value=1.5):
        assert cli.main(["--machine"]) == 0
    out = capsys.readouterr().out
    assert "DRAM 10/20 GB/s" in out and "compute 1.50x" in out
    spec = cost.get_device_spec("cpu")
    assert spec.levels[-1].parallel == 20e9 and spec.cpu.libm == 1.5 * cpu_cost.CPU_COSTS.libm
    assert spec.cpu.op == cpu_cost.CPU_COSTS.op


def test_stored_figures_can_be_ignored(cache_dir, monkeypatch):
    cpu_machine.save(cache_dir, RATES)
    assert cost.get_device_spec("cpu") is not cost.DEVICES["cpu"]
    monkeypatch.setenv("KFUSE_CPU_MACHINE", "0")
    config.reload()
    assert cost.get_device_spec("cpu") is cost.DEVICES["cpu"]


def test_blas_rates_price_a_matmul_group(cache_dir):
    """The measured BLAS rates are the CPU matmul group's float32/float64 peaks: twice the rate,
    about half the product's price; a file without them keeps the fitted peaks."""
    a, b = np.ones((512, 256), np.float32), np.ones((256, 384), np.float32)
    def price():
        return kfuse.jit(lambda x, y: x @ y).lower(a, b, device="cpu").plan.groups[0].cost.seconds
    cpu_machine.save(cache_dir, RATES)
    assert cost.get_device_spec("cpu").peak(np.float32) == cost.DEVICES["cpu"].peak(np.float32)
    fitted = cost.DEVICES["cpu"].peak(np.float32)
    slow = price()
    cpu_machine.save(cache_dir, RATES, blas={"f32": 4 * fitted, "f64": 1e9})
    spec = cost.get_device_spec("cpu")
    assert spec.peak(np.float32) == 4 * fitted and spec.peak(np.float64) == 1e9
    assert price() < 0.5 * slow


def test_measure_blas_gives_both_rates():
    rates = cpu_machine.measure_blas(budget_s=0.01)
    assert set(rates) == {"f32", "f64"} and all(1e8 < r < 1e14 for r in rates.values()), rates


def test_measured_l3_capacity(cache_dir):
    """The L3's reliable part measured is the one the levels and the plan price at: a 48 MiB
    working set priced at the L3's rate with 64 MiB of it, DRAM's without."""
    x = np.zeros((2048, 3072), np.float32)          # 24 MiB in and out
    def price():
        return kfuse.jit(lambda a: a * 2.0 + 1.0).lower(x, device="cpu").plan.groups[0].cost.seconds
    cpu_machine.save(cache_dir, RATES)
    dram = price()
    cpu_machine.save(cache_dir, RATES, l3_reliable=64 << 20)
    (l3,) = [lv for lv in cost.get_device_spec("cpu").levels if lv.name == "L3"]
    assert l3.reliable == 64 << 20 and l3.bytes >= 64 << 20
    assert price() < 0.5 * dram                     # 60 GB/s against 20


def test_measure_l3_reliable_is_a_probe_size():
    held = cpu_machine.measure_l3_reliable({"L3": (1e9, 1e9)}, budget_s=0.005)     # (every probe holds)
    assert held == cpu_machine.CAPACITY_PROBES[-1]
    assert cpu_machine.measure_l3_reliable({"L3": (1e15, 1e15)}, budget_s=0.005) == cpu_machine.PROBES["L3"]


def test_measured_cold_call_is_the_cold_cost(cache_dir):
    cpu_machine.save(cache_dir, RATES)
    assert cost.get_device_spec("cpu").cpu.cold == cpu_cost.CPU_COSTS.cold      # (none measured)
    cpu_machine.save(cache_dir, RATES, cold=7e-6, gather=4e-9)
    spec = cost.get_device_spec("cpu")
    assert spec.cpu.cold == 7e-6 and spec.cpu.gather == 4e-9
    assert 0.0 <= cpu_machine.measure_cold_call(rounds=3) < 1e-3
    assert 0.0 < cpu_machine.measure_gather(budget_s=0.01) < 1e-5
