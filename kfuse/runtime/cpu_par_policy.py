"""When an untuned CPU kernel gets its parallel variant: the compile is paid once its gain has
been lost for as long as the compile takes (a ski-rental rule, never more than twice the better
choice made in hindsight).

Threads help a kernel per call from about 2**16 work units on the dev box (idle, 2 cores: a
16x512 f32 row softmax runs in 5.9 us on one thread and 5.5 on two; 64x512: 22 us and 12-14 us;
1024x1024: 674 and 338 us), and ``runtime.cpu.PAR_MIN_WORK`` (2**18) keeps the smaller ones on
one thread. But the parallel variant is a second Numba compile: 0.65-1.7 s for that softmax, so
the 10 us it saves a call pays for itself after ~100,000 calls, and running it at the second call
(as kfuse did) cost every short-lived process 0.6 s. Loaded from the disk cache instead it costs
about 5 ms.

The rule, per kernel and schedule, when ``auto_threads`` would give it threads: the calls run
sequentially and each adds the time threads would have saved (its measured time times
``1 - 1/threads``) to the kernel's *rent*; once the rent reaches what getting the parallel variant
costs (:data:`LOAD_S` where the disk cache holds its machine code for these argument types,
:data:`PAR_COMPILE_S` where it must compile, nothing where this process has it already), it is
compiled or loaded and runs from then on. A kernel whose first call alone would save more than the
parallel compile costs beyond the sequential one (estimated from ``kernel_work`` at
:data:`WORK_PER_S`) runs in parallel at once, and never compiles the sequential variant; one whose
threads would save :data:`EAGER_GAIN_S` a call or more gets them from its second call, by the
estimate or, once two sequential calls after the first few were timed, by the faster of them: the
estimate counts element-passes, which a transposed or gathered read takes several times longer
over (a batched transpose-add of 2**19 f32 elements: estimated 87 us, measured 420).

Once an account is settled (the cost known, both timed calls taken, the rent still short) it
opens a *lease*: :attr:`ParState.lease` (the rent up to which nothing changes) and
:attr:`ParState.lease_work` (the largest kernel the answer holds for; the account is shared by a
kernel's sizes), so a cached call (``runtime/cpu_direct``) runs the sequential variant and adds
its rent inline, without asking the policy (its decisions, the thread count's lookups and the
schedule's argument shaping cost a 4 MiB permuted copy ~5 us of its ~40); the rule is the same.
"""
from __future__ import annotations

from . import cpu_persist

PAR_COMPILE_S = 1.0     # a parallel variant's Numba compile (softmax 64x512 f32: 0.65-1.7 s, dev box)
SEQ_COMPILE_S = 0.5     # the sequential one's (the same softmax: 0.45-0.75 s)
LOAD_S = 0.005          # either, loaded from the disk cache (cpu_persist: 3-6 ms)
NUMBA_IMPORT_S = 0.12   # importing Numba where kernels ran natively (cpu_native): 90-130 ms, dev box
EAGER_GAIN_S = 5e-5      # a kernel whose threads save this much a call gets them from its second
                         # call (an 8 MiB clip: 0.22 -> 0.12 ms); the rent rule is for the small
                         # ones (a 64x512 softmax saves ~10 us a call against a 1 s compile). Asking
                         # the disk cache at every rented call cost 0.1 ms a call (corpus, 18:50)
WARM_CALLS = 3          # calls before the two timed ones: the first touches of fresh outputs and
                        # cold inputs ran a 2 MiB permuted copy at 3x its time (corpus, 00:55)
WORK_PER_S = 1.2e10     # kernel_work units a second on one thread (f32 row softmax, 64x512 to
                        # 1024x1024: 1.17-1.24e10; libm-heavy float64 kernels run ~4x fewer)


def gain(seconds: float, threads: int) -> float:
    """What ``threads`` threads would save on a call that takes ``seconds`` on one (at best)."""
    return seconds * (1.0 - 1.0 / threads)


def first_call_parallel(work: int, threads: int) -> bool:
    """Whether a kernel's very first call should compile and run the parallel variant alone:
    the call's estimated saving exceeds the extra compile time."""
    return gain(work / WORK_PER_S, threads) >= PAR_COMPILE_S - SEQ_COMPILE_S


class ParState:
    """One schedule's account: the rent paid so far (s), sequential calls run, and whether the
    parallel variant was bought."""
    __slots__ = ("rent", "calls", "ready", "cost", "timed", "lease", "lease_work", "share")

    def __init__(self) -> None:
        self.rent = 0.0
        self.calls = 0
        self.ready = False
        self.cost = None        # seconds to get the parallel variant, asked once (a disk check)
        self.timed = []         # seconds per work unit of two timed sequential calls after
                                # WARM_CALLS (the account is shared by a kernel's sizes)
        self.lease = 0.0        # a sequential call of at most lease_work units while the rent is
        self.lease_work = 0     # below lease needs no decision (0: ask at every call)
        self.share = 0.0        # the share of a call's time threads would save (rent per second)

    def pay(self, seconds: float, threads: int, work: int) -> None:
        """Account a sequential call that took ``seconds`` (the first one: estimated from
        ``work``, its time holds the compile or load)."""
        if self.calls == 0:
            seconds = work / WORK_PER_S
        elif self.calls >= WARM_CALLS and len(self.timed) < 2 and work:
            self.timed.append(seconds / work)
        self.calls += 1
        self.rent += gain(seconds, threads)

    def call_s(self, work: int) -> float:
        """A sequential call's time: the estimate from ``work``, or the faster rate of two timed
        calls where that gives longer (the faster: a descheduled call does not buy a compile)."""
        est = work / WORK_PER_S
        return max(est, work * min(self.timed)) if len(self.timed) == 2 else est

    def renting(self, work: int, threads: int) -> bool:
        """Whether this call surely runs sequentially (``buy`` would say False without asking
        for the dispatchers): the rent is still short of a cost already known."""
        sure = (not self.ready and self.calls > 0 and self.cost is not None and self.rent < self.cost
                and gain(self.call_s(work), threads) < EAGER_GAIN_S)
        if sure and len(self.timed) == 2 and not self.lease:
            self.share = gain(1.0, threads)
            self.lease_work = int(EAGER_GAIN_S / (self.share * self.call_s(1)))
            self.lease = self.cost
        return sure

    def buy(self, work: int, threads: int, seq, par) -> bool:
        """Whether this call runs the parallel dispatcher ``par`` (``seq``: the sequential one of
        the same schedule); once True, always True."""
        if not self.ready:
            if self.calls == 0:
                self.ready = first_call_parallel(work, threads)
            elif gain(self.call_s(work), threads) >= EAGER_GAIN_S:
                self.ready = True       # a heavy kernel: bought at its second call, as rent would soon
            else:
                if self.cost is None:
                    self.cost = par_cost(seq, par)
                self.ready = self.rent >= self.cost
        if self.ready:
            self.lease = 0.0
        return self.ready


def par_cost(seq, par) -> float:
    """Seconds to get ``par`` for the argument types ``seq`` last ran with: compiled already,
    loaded from the disk cache or compiled; where ``seq`` ran a native object in a process
    without Numba (``cpu_native``), Numba's import first."""
    if getattr(seq, "pair", True) is None:
        return NUMBA_IMPORT_S + (LOAD_S if seq.parallel_stored() else PAR_COMPILE_S)
    sigs = getattr(seq, "signatures", None)
    if not sigs:
        return PAR_COMPILE_S
    if sigs[-1] in getattr(par, "overloads", {}):
        return 0.0
    return LOAD_S if cpu_persist.is_stored(par, sigs[-1]) else PAR_COMPILE_S
