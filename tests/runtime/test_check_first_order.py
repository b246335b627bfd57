"""The GPU launch order puts the groups computing index checks first (runtime.check_flags
``check_first_order``): a cross-entropy's label check runs before its row kernel, so the call
waits for the check's flag alone; the order stays a topological order of the plan, and a plan
without checks keeps its own."""
import numpy as np

import kfuse
from kfuse.runtime.check_flags import check_first_order


def cross_entropy(logits, labels):
    m = np.max(logits, axis=1, keepdims=True)
    lse = np.log(np.sum(np.exp(logits - m), axis=1)) + m[:, 0]
    return np.mean(lse - np.take_along_axis(logits, labels[:, None], axis=1)[:, 0])


def gather_of_computed_index(x, i):      # the check reads an index computed by an earlier group
    j = (i * 2) % 7 + np.argmax(x, axis=1)
    return np.take(x.sum(1), j) * 3.0


def _plan(fn, *args):
    return kfuse.jit(fn, backend="cuda").lower(*args).plan


def _topological(plan, order):
    made = {n: i for i, g in enumerate(plan.groups) for n in g.outputs}
    seen = set()
    for i in order:
        if any(made[n] not in seen for n in plan.groups[i].inputs if n in made):
            return False
        seen.add(i)
    return sorted(order) == list(range(len(plan.groups)))


def test_label_check_launches_first():
    plan = _plan(cross_entropy, np.zeros((64, 1000), np.float32), np.zeros(64, np.int64))
    order, flags = check_first_order(plan)
    assert len(flags) == 1 and _topological(plan, order)
    check = next(iter(flags))
    assert check in plan.groups[order[0]].outputs and order != list(range(len(plan.groups)))


def test_checks_after_their_producers():
    plan = _plan(gather_of_computed_index, np.zeros((16, 9), np.float32), np.zeros(16, np.int64))
    order, flags = check_first_order(plan)
    assert flags and _topological(plan, order)


def test_no_checks_no_reordering():
    plan = _plan(lambda x: np.exp(x) / np.sum(np.exp(x), axis=1, keepdims=True) + x.mean(0), np.zeros((8, 9), np.float32))
    assert check_first_order(plan) == (list(range(len(plan.groups))), {})


def test_a_flag_slot_per_distinct_flag():
    """Two gathers by one index are two checks of one flag: one slot (the slots are dense, one
    a distinct flag; the pinned bytes are as many)."""
    plan = _plan(lambda a, i: (a * 2 + 1)[i] - a[i], np.zeros(10, np.float32), np.zeros(4, np.int64))
    _, flags = check_first_order(plan)
    assert len(plan.graph.checks) == 2 and list(flags.values()) == [0]
