"""docs/results/learning_claims.py: the statistics by hand on a small fixture
(tests/fixtures/learning/), the committed summaries recomputed, learning.md's generated
tables equal to the script's output, and the planned configs of the pre-registration."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

from llm4cov.pipeline import load_config

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "docs" / "results" / "learning_claims.py"
FIXTURE = REPO / "tests" / "fixtures" / "learning"
PLANNED = REPO / "experiments" / "smollm2_cpu" / "configs" / "planned"

spec = importlib.util.spec_from_file_location("learning_claims", SCRIPT)
lc = importlib.util.module_from_spec(spec)
sys.modules["learning_claims"] = lc  # dataclasses look their module up
spec.loader.exec_module(lc)

NEW, OLD = lc.Arm("new", ("new",)), lc.Arm("old", ("old",))


# ----------------------------------------------------------------- statistics by hand

def test_sign_test_by_hand():
    assert lc.sign_test(6, 0) == pytest.approx(2 * 0.5 ** 6) == pytest.approx(0.03125)
    assert lc.sign_test(0, 6) == lc.sign_test(6, 0)
    assert lc.sign_test(4, 1) == pytest.approx(2 * (1 + 5) / 2 ** 5)  # 0.375
    assert lc.sign_test(12, 3) == pytest.approx(2 * (1 + 15 + 105 + 455) / 2 ** 15)  # 0.035
    assert lc.sign_test(1, 1) == 1.0 and lc.sign_test(0, 0) == 1.0


def test_holm_by_hand():
    # sorted: 0.01 x 4 = 0.04, 0.03125 x 3 = 0.09375, 0.375 x 2 = 0.75, (none) x 1
    assert lc.holm([0.03125, 0.375, None, 0.01]) == pytest.approx([0.09375, 0.75, None, 0.04])
    # step-down keeps the order: 0.03 x 1 = 0.03 < 0.02 x 2 = 0.04, so 0.04
    assert lc.holm([0.01, 0.02, 0.03]) == pytest.approx([0.03, 0.04, 0.04])
    assert lc.holm([0.6, 0.5]) == [1.0, 1.0]


def test_wilson_matches_the_notebooks_intervals():
    def pct(k, n):
        return tuple(round(100 * x, 1) for x in lc.wilson(k, n))
    assert pct(0, 64) == (0.0, 5.7)
    assert pct(22, 64) == (23.9, 46.6)
    assert pct(5, 64) == (3.4, 17.0)
    assert pct(40, 64) == (50.3, 73.3)


def test_pass_at_k_is_chens_estimator():
    assert lc.pass_at_k(5, 2, 1) == pytest.approx(0.4)
    assert lc.pass_at_k(5, 2, 2) == pytest.approx(1 - 3 / 10)
    assert lc.pass_at_k(1, 1) == 1.0 and lc.pass_at_k(5, 0) == 0.0
    with pytest.raises(ValueError):
        lc.pass_at_k(3, 4)


def test_family_from_the_task_id():
    assert lc.family("rtllm/accu") == "RTLLM"
    assert lc.family("realbench/sdc/sd_crc_7") == "RealBench dev"
    assert lc.family("verilog_eval/Prob031_dff") == "VerilogEval held-out"
    with pytest.raises(ValueError, match="unknown family"):
        lc.family("cvdp/x")


# ----------------------------------------------------------------- the fixture

def test_paired_sign_tests_on_the_fixture():
    new, old = lc.load(NEW, FIXTURE), lc.load(OLD, FIXTURE)
    assert new["rtllm/t9"].n == 0  # its one sample failed in the tool: not scored
    sim = lc.pair(new, old, "sim")
    assert (sim.tasks, sim.wins, sim.losses) == (8, 6, 0)
    assert sim.p == pytest.approx(0.03125)
    assert sim.by_family == {"RTLLM": (2, 0), "RealBench dev": (1, 0),
                             "VerilogEval held-out": (3, 0)}
    cov = lc.pair(new, old, "cov")
    assert (cov.wins, cov.losses) == (4, 1)
    assert cov.p == pytest.approx(2 * (1 + 5) / 2 ** 5)  # 0.375
    assert cov.by_family == {"RTLLM": (1, 1), "RealBench dev": (1, 0),
                             "VerilogEval held-out": (2, 0)}


def test_rounds_baseline_arms_and_seeds():
    final = lc.read_summary(FIXTURE / "agentic" / "summary.json")
    first = lc.read_summary(FIXTURE / "agentic" / "summary.json", round_=1)
    assert (final["rtllm/t1"].sim, first["rtllm/t1"].sim) == (1, 0)
    assert first["rtllm/t3"] == lc.Outcome(1, 1, 1, 80.0)
    assert lc.read_summary(FIXTURE / "old" / "summary.json")["rtllm/t3"].cov == 1  # model arm
    seeds = lc.Arm("seeds", ("seed0", "seed1"))
    pooled = lc.load(seeds, FIXTURE)["rtllm/t1"]
    assert (pooled.n, pooled.sim, pooled.cov) == (10, 5, 1)
    assert pooled.rate("sim") == pytest.approx(0.5)
    assert lc.pair(lc.load(seeds, FIXTURE), lc.load(lc.Arm("o", ("other",)), FIXTURE),
                   "sim").wins == 1  # 0.5 > 0.2
    assert lc.decoding(seeds, FIXTURE) == "T 0.7, top-p 0.8, n = 5, 2 seeds"
    assert lc.decoding(NEW, FIXTURE) == "greedy, 1 seed"


def test_holm_over_the_list_and_comparisons_not_run():
    missing = (lc.Arm("p", ("absent_a",)), lc.Arm("q", ("absent_b",)))
    claims = (lc.Comparison("X1", "new beats old", NEW, OLD),
              lc.Comparison("X2", "not decidable today", None, None, missing,
                            missing="no such run", planned_note="phase 9"))
    decisions = lc.decide(claims, FIXTURE)
    assert [d.pair.p if d.pair else None for d in decisions] == pytest.approx(
        [0.03125, 0.375, None, None])
    # m = 4 (the whole list): 0.03125 x 4 = 0.125, 0.375 x 3 > 1
    assert [d.holm_p for d in decisions] == pytest.approx([0.125, 1.0, None, None])
    assert [d.verdict for d in decisions] == ["not shown", "not shown", "not run", "not run"]
    table = lc.claims_table(decisions)
    assert "| X1 | new beats old | Sim Pass | new vs old | greedy, 1 seed | 8 | 6/0 | 0.031 " \
           "| 0.125 | not shown |" in table
    assert "| X2 | not decidable today | Cov Pass | - | - | - | - | - | - | not run: no such " \
           "run |" in table
    assert "not run: phase 9; 0 of 2 summaries committed" in lc.planned_table(claims, FIXTURE)
    assert "not run (2 summaries missing)" in lc.exploratory_table(
        FIXTURE, decisions, [("absent", *missing)])

    decided = lc.decide([lc.Comparison("X3", "planned decides", None, None, (NEW, OLD))],
                        FIXTURE)
    assert decided[0].arms == (NEW, OLD) and decided[0].pair.wins == 6
    assert "committed: decides the claim" in lc.planned_table(
        [lc.Comparison("X3", "", None, None, (NEW, OLD))], FIXTURE)
    decided[0].holm_p = 0.01
    assert decided[0].verdict == "supported"
    decided[0].pair.wins, decided[0].pair.losses = 0, 6
    assert decided[0].verdict == "reversed"


def test_generated_blocks_round_trip():
    names = lc.BLOCK_NAMES
    text = "intro\n" + "".join(f"{lc.begin(n)}\nold\n{lc.end(n)}\n" for n in names)
    new = {n: f"| table {n} |" for n in names}
    assert lc.read_blocks(lc.write_blocks(text, new)) == new
    with pytest.raises(ValueError, match="no generated block"):
        lc.write_blocks("no markers", new)


# ----------------------------------------------------------------- the committed data

def test_learning_md_tables_are_the_scripts_output():
    committed = lc.read_blocks(lc.DOC.read_text(encoding="utf-8"))
    generated = lc.blocks()
    assert set(committed) == set(generated) == set(lc.BLOCK_NAMES)
    for name in lc.BLOCK_NAMES:
        assert committed[name] == generated[name], (
            f"learning.md block {name!r} is stale: python docs/results/learning_claims.py "
            "--write")


@pytest.mark.parametrize("path", sorted(lc.RUNS.glob("*/summary.json")),
                         ids=lambda p: p.parent.name)
def test_committed_summaries_recompute_their_own_headline(path):
    """The per-task rows the script reads give each bench's own headline and per-source
    rates, so the tables rest on the same numbers the benches reported."""
    summary = json.loads(path.read_text(encoding="utf-8"))
    arm = lc._model_arm(summary, path)
    outcomes = lc.read_summary(path)
    groups = {"all": (arm["headline"], outcomes)} | {
        source: (rates, {t: o for t, o in outcomes.items() if t.startswith(source + "/")})
        for source, rates in arm["by_source"].items()}
    for rates, group in groups.values():
        scored = [o for o in group.values() if o.n]
        assert len(scored) == rates["tasks"]
        assert 100 * sum(o.rate("sim") for o in scored) / len(scored) == pytest.approx(
            rates["sim_pass"])
        assert 100 * sum(o.rate("cov") for o in scored) / len(scored) == pytest.approx(
            rates["cov_pass"])
        assert sum(o.cov_sum / o.n for o in scored) / len(scored) == pytest.approx(
            rates["avg_cov"])


@pytest.mark.parametrize(("direct", "agentic"), [
    ("smollm2v5_stage0_direct", "smollm2v6r_stage0_agentic"),
    ("smollm2v6_stage1_direct", "smollm2v6r_stage1_agentic"),
    ("smollm2v6_naive_direct", "smollm2v6r_naive_agentic"),
    ("smollm2v6r_stage2_direct", "smollm2v6r_stage2_agentic"),
    ("smollm2v6r_stage2_60_direct", "smollm2v6r_stage2_60_agentic"),
    ("smollm2v7_stage0_direct", "smollm2v7_stage0_agentic")])
def test_agentic_round_one_is_the_direct_answer(direct, agentic):
    """Why the base model's direct row is its agentic bench's round 1 (no direct summary
    of it is committed): in every committed pair the two agree task for task."""
    def rows(outcomes):
        return {t: (o.n, o.sim, o.cov, round(o.cov_sum, 3)) for t, o in outcomes.items()}
    assert rows(lc.read_summary(lc.RUNS / direct / "summary.json")) == rows(
        lc.read_summary(lc.RUNS / agentic / "summary.json", round_=1))


def test_every_arm_of_the_claims_is_committed():
    for arm in [a for c in lc.CLAIMS for a in (c.new, c.old) if a] + list(lc.FINAL):
        assert lc.committed(arm, lc.RUNS), arm.label


# ----------------------------------------------------------------- planned configs

def _train(name: str) -> dict:
    return load_config(PLANNED / name).train_settings(None)


def test_planned_configs_load():
    names = sorted(p.name for p in PLANNED.glob("*.yaml"))
    assert names == sorted([*(f"c4_{arm}_s{s}.yaml" for s in (0, 1, 2) for arm in
                              ("naive", "progressive_stage0", "progressive_stage1")),
                            "p2_stage0.yaml", "p2_stage1.yaml", "p2_stage2.yaml"])
    outs = {load_config(PLANNED / n).out for n in names}
    assert len(outs) == len(names)  # every run its own directory


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_c4_arms_differ_only_in_staging(seed):
    """C4: both arms at one learning rate, warm-up, length and seed, on the same files."""
    stage0 = load_config(PLANNED / f"c4_progressive_stage0_s{seed}.yaml")
    stage1 = load_config(PLANNED / f"c4_progressive_stage1_s{seed}.yaml")
    naive = load_config(PLANNED / f"c4_naive_s{seed}.yaml")
    trains = [c.train_settings(None) for c in (stage0, stage1, naive)]
    assert all(t == trains[0] for t in trains)
    assert trains[0]["seed"] == seed and trains[0]["learning_rate"] == 2e-4
    assert stage0.init == naive.init == "smollm2-135m"
    assert stage1.init == f"{stage0.out}/naive/checkpoint"
    assert naive.naive.datasets == stage0.naive.datasets + stage1.naive.datasets
    assert stage0.bench is None
    assert stage1.bench.identity() == naive.bench.identity()
    bench = naive.bench
    assert (bench.samples, bench.temperature, bench.top_p, bench.max_tokens) == (
        5, 0.7, 0.8, 512)
    assert [m.value for m in bench.modes] == ["direct"]
    summaries = {Path(s).name for s in lc.C4_PROG.summaries + lc.C4_NAIVE.summaries}
    assert f"smollm2c4_progressive_s{seed}_direct_n5" in summaries


def test_phase2_configs_rebuild_the_recorded_lineage():
    records = REPO / "experiments" / "smollm2_cpu" / "configs"
    for planned, record in [("p2_stage0.yaml", "pipeline_smollm2_cpu_v6r_stage0.yaml"),
                            ("p2_stage1.yaml", "pipeline_smollm2_cpu_v6r_stage1.yaml")]:
        assert _train(planned) == load_config(records / record).train_settings(None)
    stage2 = load_config(records / "pipeline_smollm2_cpu_v6r_stage2_all.yaml").train_settings(None)
    assert _train("p2_stage2.yaml") == stage2
    bench = load_config(PLANNED / "p2_stage2.yaml").bench
    assert (bench.samples, bench.temperature, bench.top_p) == (5, 0.7, 0.8)
    assert [m.value for m in bench.modes] == ["direct", "agentic"]
