"""The suite times a case's peers in interleaved rounds and pools each peer's runs (no GPU)."""
from kfuse.bench import suite, timing


class _FakePeer:
    """Records which peer measured when; its k-th window's runs are ``base + k``."""

    def __init__(self, name, base, log, fail_at=None):
        self.name, self.base, self.log, self.fail_at, self.k = name, base, log, fail_at, 0

    def measure(self, call, **kw):
        call(0)
        self.log.append(self.name)
        if self.k == self.fail_at:
            raise RuntimeError("device lost")
        samples = [self.base + self.k, self.base + self.k + 0.5]
        self.k += 1
        return timing._summary(samples, "fake")


def _ready(peer):
    return suite._Ready(peer, {"impl": peer.name}, lambda *a: None, [[1]], 0.0)


def test_rounds_rotate_the_order_and_pool_every_window():
    log = []
    a, b, c = (_ready(_FakePeer(n, base, log)) for n, base in (("a", 10.0), ("b", 20.0), ("c", 30.0)))
    suite._time_interleaved([a, b, c], quick=False, device="gpu")
    n = suite.ROUNDS
    assert log[:3] == ["a", "b", "c"] and log[3:6] == ["b", "c", "a"] and len(log) == 3 * n
    samples = sorted([10.0 + k for k in range(n)] + [10.5 + k for k in range(n)])
    assert a.row["runs"] == 2 * n and a.row["rounds"] == n
    assert a.row["ms_min"] == 10.0 and a.row["ms_max"] == 10.5 + n - 1
    assert a.row["ms"] == (samples[n - 1] + samples[n]) / 2        # the median of all 2n runs
    assert b.row["ms_min"] == 20.0 and c.row["ok"]


def test_a_peer_failing_in_a_round_is_dropped_and_the_rest_go_on():
    log = []
    good, bad = _ready(_FakePeer("good", 1.0, log)), _ready(_FakePeer("bad", 2.0, log, fail_at=1))
    suite._time_interleaved([good, bad], quick=False, device="gpu")
    assert bad.row["ok"] is False and "device lost" in bad.row["error"]
    assert good.row["ok"] and good.row["runs"] == 2 * suite.ROUNDS
    assert log.count("bad") == 2


def test_quick_is_one_round_and_timing_dicts_leave_the_runs_out():
    log = []
    a = _ready(_FakePeer("a", 1.0, log))
    suite._time_interleaved([a], quick=True, device="cpu")
    assert log == ["a"] and a.row["rounds"] == 1
    t = timing._summary([1.0, 2.0, 3.0], "x")
    assert "samples_ms" not in t.as_dict() and timing.pooled([t, t]).runs == 6
