"""Evaluator settings (one dataclass; every field has a default and a unit)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class SimConfig:
    """How ``Sim(repo, testbench)`` builds and runs a simulation.

    Times are seconds (wall-clock unless named ``sim_``), sizes bytes or characters.
    """

    compile_timeout_s: float = 300.0
    run_timeout_s: float = 60.0
    sim_time_limit_s: float = 0.01
    """Simulated-time limit (seconds of simulated time, 10 ms = 1M cycles at 100 MHz).
    A testbench that never ends is stopped here with its coverage kept (status timeout)."""
    max_time_slots: int = 2_000_000
    """Limit on how often simulated time may advance (about 1M clock cycles): bounds a
    testbench with a free-running clock and no $finish whatever its timescale."""
    run_cpu_limit_s: int = 120
    run_memory_bytes: int = 4 * 1024**3
    run_file_bytes: int = 256 * 1024**2
    output_cap_bytes: int = 256 * 1024
    log_limit_chars: int = 6000
    feedback_limit: int = 40
    seed: int = 1
    fsm_coverage: bool = False
    """FSM coverage is opt-in: it crashes the pinned Verilator on about a quarter of real
    designs. When on and Verilator dies with an internal error, the build is retried
    without it (noted in the observation)."""
    build_jobs: int = 1
    keep_workdir: bool = False
    workdir_root: str | None = None
    extra_verilator_args: tuple[str, ...] = field(default_factory=tuple)

    def coverage_options(self) -> list[str]:
        """The exact Verilator coverage flags used."""
        flags = ["--coverage-line", "--coverage-expr", "--coverage-toggle", "--coverage-user"]
        return [*flags, "--coverage-fsm"] if self.fsm_coverage else flags
