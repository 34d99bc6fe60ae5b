"""Durations, repetitions and sweep values of a run: the full run and the
smoke run (a few seconds per scenario, every code path, no thresholds)."""

from dataclasses import dataclass, field


@dataclass
class Profile:
    name: str
    reps: int                      # A B A B ...: each backend this many times, interleaved
    warmup_s: float                # traffic running before a window is read
    g2o_s: float                   # guest->outside measurement window
    sizes: tuple                   # frame lengths without FCS
    o2g_trial_s: float             # one paced trial of the outside->guest search
    o2g_start_pps: float           # first rate tried (a previous repetition's result is used when known)
    o2g_max_trials: int
    o2g_precision: float           # stop when (fail - pass) / fail is at most this
    o2g_max_pps: float
    loss_limit: float              # outside->guest: highest rate with at most this loss
    rr_s: float                    # request/response window
    rr_warmup: int                 # requests not counted
    light_s: float                 # one request per ms
    idle_s: float
    probe_s: float
    busy_poll_values: tuple
    signal_batch_values: tuple
    napi_values: tuple
    sweep_rr_s: float
    sweep_light_s: float
    sweep_o2g_pps: float           # offered rate of the guest-RX sweeps when no search result is known
    sweep_trial_s: float
    nn_attacks: tuple              # noisy neighbour: hostile guest attacks, one record each
    nn_pairs: int                  # (without, with) window pairs per attack and repetition
    nn_s: float                    # one guest->outside window
    nn_period_us: int = 100        # the hostile guest's round period
    backend_cpu: int = 0           # the backend, and the paced source / ICMP client (nice -20)
    guest_cpu: int = 1             # the guest alone
    client_sched: str = "fifo"     # ICMP client: SCHED_FIFO 10 (blocking, never spins) or "nice" (-20 only)
    nice: int = 0                  # nice level of backend and guest (the source/client run at -20)
    settle_s: float = 0.2          # after a paced trial, before counters are read
    tcp_secs: int = 10             # real-guest TCP: iperf3 duration
    tcp_reps: int = 0              # real-guest TCP repetitions (0: reps)
    tcp_scenarios: tuple = ("tcp_guest_to_outside", "tcp_outside_to_guest", "tcp_vm_to_vm")
    tcp_backends: tuple = ("tap", "xdpvhostd", "dpdk", "tap-seg")
    xdpvhostd_tunables: dict = field(default_factory=lambda: {
        "busy_poll_us": 50, "signal_batch": 32, "napi_busy_poll": False})


FULL = Profile(
    name="full", reps=3, warmup_s=1.0, g2o_s=5.0, sizes=(64, 1500),
    o2g_trial_s=3.0, o2g_start_pps=200_000, o2g_max_trials=9, o2g_precision=0.04, o2g_max_pps=3_000_000,
    loss_limit=0.005, rr_s=10.0, rr_warmup=1000, light_s=10.0, idle_s=10.0, probe_s=0.5,
    busy_poll_values=(0, 10, 25, 50, 100, 200), signal_batch_values=(1, 4, 16, 32, 64, 256),
    napi_values=(False, True), sweep_rr_s=5.0, sweep_light_s=5.0, sweep_o2g_pps=200_000,
    sweep_trial_s=3.0, nn_attacks=("tx_overlong", "tx_oversize", "reset_storm"), nn_pairs=4, nn_s=3.0)

SMOKE = Profile(
    name="smoke", reps=2, warmup_s=0.3, g2o_s=1.0, sizes=(64, 1500),
    o2g_trial_s=0.5, o2g_start_pps=100_000, o2g_max_trials=2, o2g_precision=0.25, o2g_max_pps=3_000_000,
    loss_limit=0.005, rr_s=1.0, rr_warmup=50, light_s=1.0, idle_s=1.0, probe_s=0.3,
    busy_poll_values=(0, 50), signal_batch_values=(1, 32), napi_values=(False, True),
    sweep_rr_s=0.5, sweep_light_s=0.5, sweep_o2g_pps=50_000, sweep_trial_s=0.5, settle_s=0.15,
    tcp_secs=3, tcp_reps=1, tcp_scenarios=("tcp_guest_to_outside",), tcp_backends=("tap", "xdpvhostd"),
    nn_attacks=("tx_overlong", "tx_oversize", "reset_storm"), nn_pairs=1, nn_s=0.5)
