"""An uncovered item's identity is typed (``UncoveredItem.key``): its kind, file, line
and construct, never its rendered wording. Every place that compares items (the merge
of a miss's instances, the formal policy's tried and settled items, goal matching,
``close``'s analyzed items and verdicts, proven-unreachable entries) follows it; an
entry or step written before items carried a construct still works by its wording."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from types import SimpleNamespace

from llm4cov.close.loop import STEPS, Closer
from llm4cov.close.model import CloseSettings, GoalVerdict, StepRecord
from llm4cov.close.residual import verdict_for
from llm4cov.sim.model.construct import Construct, ConstructKind
from llm4cov.sim.model.coverage import Point, uncovered_items
from llm4cov.sim.model.exclusions import ProvenUnreachable, goals_at, proven_unreachable
from llm4cov.sim.model.observation import UncoveredItem
from llm4cov.tasks.loaders import task_from_dir

RESIDUAL = Path(__file__).parent / "fixtures" / "close_residual"
SOURCES = {"close_residual.v": (RESIDUAL / "close_residual.v").read_text()}
THEN_47 = "then branch of the if at close_residual.v:47 never taken"


def _point(hier: str = "tb.dut", line: int = 47, col: int = 7, comment: str = "if",
           metric: str = "branch") -> Point:
    """A missed point Verilator writes for close_residual.v (the ``if`` at line 47)."""
    return Point(metric, "close_residual.v", line, comment, hier, 0, str(line), col,
                 "close_residual")


def _item() -> UncoveredItem:
    [item], _ = uncovered_items([_point()], "tb.dut", SOURCES)
    return item


def test_the_key_is_the_construct_not_the_wording():
    item = _item()
    assert item.detail == THEN_47
    assert item.typed == Construct(kind=ConstructKind.IF_ARM, at=47, arm="then",
                                   condition="ticks == 16'hFFFF")
    reworded = item.model_copy(update={"detail": "the `ticks == 16'hFFFF` arm, never run"})
    assert reworded.key == item.key
    assert hash(reworded.key) == hash(item.key)
    assert reworded.key_text == item.key_text == (
        "branch|close_residual.v|47|"
        '{"arm":"then","at":47,"condition":"ticks == 16\'hFFFF","kind":"if_arm"}')
    other = item.model_copy(update={"typed": item.typed.model_copy(update={"arm": "else"})})
    assert other.detail == item.detail and other.key != item.key
    # the key survives a JSON round trip (formal's result cache, round records)
    back = UncoveredItem.model_validate_json(item.model_dump_json())
    assert back.key == item.key and back.key_text == item.key_text


def test_an_item_read_back_from_its_wording_keeps_that_wording_in_its_key():
    """A hand-written item's construct is read from its words, losing the label: two
    case items of one case read back alike, so their wording still tells them apart."""
    one = UncoveredItem(kind="branch", file="m.v", line=3,
                        detail="case item 2'd1 of the case at m.v:3 never executed")
    two = one.model_copy(update={"detail": "case item 2'd2 of the case at m.v:3 never executed"})
    two = UncoveredItem.model_validate(two.model_dump(exclude={"typed"}))
    assert one.typed == two.typed and one.typed.from_text
    assert one.key != two.key
    assert one.key_text == ('branch|m.v|3|{"at":3,"from_text":true,"kind":"case_item"}'
                            "|case item 2'd1 of the case at m.v:3 never executed")


def test_instances_merge_by_construct_whatever_the_rendering(monkeypatch):
    """The same miss in two instances is one item even when each rendering differs;
    two misses worded alike at one line stay two items."""
    calls = itertools.count()
    monkeypatch.setattr("llm4cov.sim.model.coverage.render",
                        lambda metric, file, c: f"wording {next(calls)}")
    points = [_point("tb.dut.u0"), _point("tb.dut.u1")]
    items, _ = uncovered_items(points, "tb.dut", SOURCES)
    assert [(i.detail, i.instances, i.copies) for i in items] == [
        ("wording 0", ("tb.dut.u0", "tb.dut.u1"), 2)]
    monkeypatch.setattr("llm4cov.sim.model.coverage.render", lambda metric, file, c: "same")
    both = [_point(), _point(col=8, comment="else")]  # then and else of the if at 47
    items, _ = uncovered_items(both, "tb.dut", SOURCES)
    assert [(i.line, i.typed.arm) for i in items] == [(47, "then"), (47, "else")]


def test_formal_policy_and_goals_compare_items_by_key():
    from llm4cov.formal.closure import GoalResult, _matching
    from llm4cov.formal.continuation import goal_key
    from llm4cov.policies.formal import FormalPolicy

    item = _item()
    reworded = item.model_copy(update={"detail": "reworded"})
    other = item.model_copy(update={"typed": item.typed.model_copy(update={"arm": "else"})})
    policy = FormalPolicy()
    task = SimpleNamespace(rtl_files=[SimpleNamespace(name="close_residual.v",
                                                      content=SOURCES["close_residual.v"])])
    assert policy._new_items(task, [item]) == [item]
    assert policy._new_items(task, [reworded, other]) == [other]  # reworded: tried
    policy._untry(task, [reworded])
    assert policy._new_items(task, [item]) == [item]
    goal = GoalResult(item=item, what="then branch", metric="branch", status="reached")
    assert _matching(goal, [other, reworded]) == [reworded]
    assert goal_key(goal) == goal_key(goal.model_copy(update={"item": reworded}))
    assert goal_key(goal) != goal_key(goal.model_copy(update={"item": other}))


def test_a_typed_proof_matches_its_point_whatever_its_stored_wording():
    item = _item()
    proof = ProvenUnreachable.of(item, "then branch", "branch")
    assert proof.typed == item.typed and proof.item == THEN_47
    entry = proof.annotation()
    assert entry == {"file": "close_residual.v", "line": 47, "kind": "branch",
                     "item": THEN_47, "goal": "then branch", "metric": "branch",
                     "typed": {"kind": "if_arm", "at": 47, "arm": "then",
                               "condition": "ticks == 16'hFFFF"}}
    assert ProvenUnreachable.from_annotation(json.loads(json.dumps(entry))) == proof
    here, elsewhere = _point(), _point(col=8, comment="else")
    reworded = ProvenUnreachable.from_annotation({**entry, "item": "old words"})
    assert [p for p, _ in goals_at([here, elsewhere], [reworded], SOURCES)] == [here]
    # a construct that differs does not match, even worded as the point is
    arm = {**entry["typed"], "condition": "en"}
    assert [p for p, _ in goals_at([here], [ProvenUnreachable.from_annotation(
        {**entry, "typed": arm})], SOURCES)] == []


def test_an_entry_without_a_construct_still_matches_by_its_wording():
    """An annotation written before entries carried ``typed`` (and one for an item read
    back from its words, which gets none)."""
    old = {"file": "close_residual.v", "line": 47, "kind": "branch", "item": THEN_47,
           "goal": "then branch", "metric": "branch"}
    [proof] = proven_unreachable([{"formal": {"unreachable_items": [old]}}])
    assert proof.typed is None and proof.annotation() == old
    here = _point()
    assert [p for p, _ in goals_at([here, _point(col=8, comment="else")], [proof],
                                   SOURCES)] == [here]
    wrong = ProvenUnreachable.from_annotation({**old, "item": "old words"})
    assert list(goals_at([here], [wrong], SOURCES)) == []
    hand = UncoveredItem(kind="branch", file="close_residual.v", line=47, detail=THEN_47)
    assert "typed" not in ProvenUnreachable.of(hand, "then branch", "branch").annotation()


def test_bench_notes_count_one_item_once_by_its_construct():
    from llm4cov.bench.formal_notes import FormalNotes

    entry = ProvenUnreachable.of(_item(), "then branch", "branch").annotation()
    notes = FormalNotes()
    for words in (THEN_47, "reworded"):
        notes.add({"sim_pass": False, "annotations": {"formal": {
            "unreachable": 1, "unreachable_items": [{**entry, "item": words}]}}})
    assert [i["item"] for i in notes.as_dict()["unreachable_items"]] == [THEN_47]


def test_a_close_run_with_old_style_steps_resumes_and_analyzes_again(tmp_path, monkeypatch):
    """steps.jsonl of a run before typed keys: ``analyzed`` holds ``kind|file|line|
    detail`` and its verdicts no construct. The rerun resumes, its old verdict still
    stands for its point (by wording), and the item is analyzed again under its new key.
    (The records are sealed here with this host's key, as a resume needs since every
    step is sealed: a run written before that is refused and rerun.)"""
    import llm4cov.formal

    item = _item()
    old_verdict = {"file": "close_residual.v", "line": 47, "kind": "branch",
                   "item": THEN_47, "goal": "then branch", "metric": "branch",
                   "status": "unknown", "reason": "not reached within 12 cycles"}
    out = tmp_path / "run"
    out.mkdir()
    rows = [{"step": 0, "origin": {"source": "random", "policy": "random", "seed": 1,
                                   "step": 0, "length": 5}, "status": "success"},
            {"step": 1, "analyzed": [f"branch|close_residual.v|47|{THEN_47}"],
             "verdicts": [old_verdict]}]
    settings = CloseSettings(lengths=(5,), formal=True, continue_steps=0)
    closer = Closer(task_from_dir(RESIDUAL), out, settings, simulate=None,  # type: ignore[arg-type]
                    formal_ready=True)
    (out / STEPS).write_text("".join(json.dumps({**r, "seal": closer._seal(
        StepRecord.model_validate(r))}) + "\n" for r in rows))
    assert closer.resume() == 2
    assert closer.state.phase == "formal" and closer.state.formal_rounds == 1
    [verdict] = closer.state.verdicts
    assert verdict.typed is None
    assert verdict_for([_point()], closer.state.verdicts, SOURCES) == {_point(): verdict}
    seen: list[list[UncoveredItem]] = []

    def analyze(task, items, config):
        seen.append(items)
        raise ValueError("stub")

    monkeypatch.setattr(llm4cov.formal, "analyze", analyze)
    monkeypatch.setattr(Closer, "holes", lambda self: [item])
    assert closer.run(stop_after=1).ended == "stopped"
    assert seen == [[item]]
    last = StepRecord.model_validate_json((out / STEPS).read_text().splitlines()[-1])
    assert last.analyzed == [item.key_text] and last.note == "formal: stub"


def test_a_verdict_keeps_its_construct_through_steps_jsonl():
    item = _item()
    verdict = GoalVerdict.of(item, "then branch", "branch", status="unreachable",
                             reason="proven", depth=4)
    record = StepRecord(step=1, verdicts=[verdict], analyzed=[item.key_text])
    back = StepRecord.model_validate_json(record.model_dump_json())
    assert back.verdicts == [verdict] and back.verdicts[0].typed == item.typed
    moved = GoalVerdict.of(item.model_copy(update={"detail": "reworded"}), "then branch",
                           "branch", status="unreachable")
    assert verdict_for([_point()], [moved], SOURCES) == {_point(): moved}
