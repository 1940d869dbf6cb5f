"""Every output format has one escaping rule (util/escape.py): terminal, Markdown,
JSON, LCOV, UCIS; task ids and names are checked when a task is loaded (issue 20,
item 7). Each hostile text here is one a testbench, a model or a task file can supply."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from conftest import FIXTURES, fixture_task, shared_path
from llm4cov.cli.app import main
from llm4cov.report.lcov import lcov_test_name, lcov_text, write_ucis_xml
from llm4cov.sim.backends.verilator.coverage_dat import COVERAGE_FORMAT, parse_coverage_dat
from llm4cov.sim.model.observation import Observation, Status, UncoveredItem
from llm4cov.sim.report import coverage_markdown
from llm4cov.tasks.loaders import load_tasks
from llm4cov.tasks.model import SourceFile, Task
from llm4cov.util.escape import json_terminal, md_block, md_code, md_text, terminal

# what a hostile testbench prints: a fence, raw HTML, a javascript: link, an image
BREAKOUT = ("```\n\n<img src=x onerror=\"document.title='XSS'\">\n"
            "[click](javascript:alert(1))\n![i](http://127.0.0.1:9/p)\n\n```text\n")
# terminal escapes: window title (OSC 0), clipboard (OSC 52), clear screen, C1 CSI, RLO
ESCAPES = "\x1b]0;pwned\x07\x1b]52;c;ZWNobyBoaQ==\x07\x1b[2J\x9b31m\u202eabc\rX"
C0_C1 = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def rendered(markdown: str) -> str:
    """CommonMark with raw HTML on, as the probes render it."""
    return MarkdownIt("commonmark", {"html": True}).render(markdown)


def no_markup_made(html: str) -> None:
    """No element the text made: the probes' own patterns (run_probes2.py)."""
    for made in (r"<img\b", r"<script\b", r"<a href=\"javascript:", r"<[a-zA-Z][^>]*\son[a-z]+="):
        assert re.search(made, html, re.I) is None, made


def test_terminal_shows_control_characters_as_escapes():
    assert terminal(ESCAPES) == ("\\x1b]0;pwned\\x07\\x1b]52;c;ZWNobyBoaQ==\\x07\\x1b[2J"
                                 "\\x9b31m\\u202eabc\\rX")
    assert terminal("a\tb\r\nc\n") == "a\tb\nc\n"  # TAB and LF kept, CRLF is a line end
    assert terminal("plain ASCII, UTF-8: é ü ✓") == "plain ASCII, UTF-8: é ü ✓"


def test_every_unicode_format_character_is_shown_as_an_escape():
    """Category Cf (bidi marks and isolates, zero-width characters, the BOM, tags: a
    twenty-sixth red team printed U+200F, U+061C, U+200B raw), whatever Unicode version
    this Python has; JSON keeps the value (a tag character as a surrogate pair)."""
    import unicodedata

    fmt = "".join(chr(c) for c in range(0x110000) if unicodedata.category(chr(c)) == "Cf")
    shown = terminal(fmt)
    assert all(unicodedata.category(ch) != "Cf" for ch in shown)
    assert shown.count("\\") == len(fmt) and shown.startswith("\\xad\\u0600")
    text = json_terminal(json.dumps({"log": fmt}, ensure_ascii=False))
    assert all(unicodedata.category(ch) != "Cf" for ch in text)
    assert json.loads(text) == {"log": fmt}
    assert terminal("\u200e\U000e0041") == "\\u200e\\U000e0041"


def test_json_for_a_terminal_is_the_same_value_without_raw_controls():
    value = {"log": "del \x7f csi \x9b rlo \u202e esc \x1b"}
    text = json_terminal(json.dumps(value, ensure_ascii=False))
    assert C0_C1.search(text) is None
    assert json.loads(text) == value


def test_a_code_block_no_line_of_its_text_can_close():
    text = BREAKOUT + "`````\n"
    block = md_block(text)
    assert block.startswith("``````text\n")  # one backtick longer than the longest run
    tokens = MarkdownIt("commonmark").parse(block)
    assert [t.type for t in tokens] == ["fence"]
    assert tokens[0].content == text


def test_code_spans_and_prose_render_literally_on_one_line():
    hostile = "a`` b\n\n<img src=x onerror=alert(1)> [x](javascript:y) *em* &lt; |c|"
    assert rendered(md_code(hostile)) == (
        "<p><code>a`` b\\n\\n&lt;img src=x onerror=alert(1)&gt; [x](javascript:y) "
        "*em* &amp;lt; |c|</code></p>\n")
    assert rendered(md_text(hostile)) == (
        "<p>a`` b\\n\\n&lt;img src=x onerror=alert(1)&gt; [x](javascript:y) *em* "
        "&amp;lt; |c|</p>\n")
    assert md_code("tb.dut") == "`tb.dut`"  # plain names keep their plain form
    assert md_code("a|b", in_table=True) == "`a\\|b`"


def test_the_markdown_answer_keeps_every_testbench_text_inert():
    obs = Observation(
        status=Status.RUNTIME_ERROR, log=BREAKOUT + ESCAPES,
        notes=["tb.sv:3 reads `<img src=x onerror=alert(1)>`, which is missing",
               "[Coverage passed](javascript:alert(1))"],
        uncovered=[UncoveredItem(kind="line", file="mux2.sv", line=9,
                                 detail="``` <img src=x onerror=alert(2)>")])
    md = coverage_markdown(obs, fixture_task("mux2"), title="Simulation")
    assert C0_C1.search(md) is None
    html = rendered(md)
    no_markup_made(html)
    code = re.findall(r"<pre><code class=\"language-text\">(.*?)</code></pre>", html, re.S)
    assert len(code) == 1 and "[click](javascript:alert(1))" in code[0]
    assert "\\x1b]0;pwned\\x07" in code[0]  # shown, not acted on


def test_task_ids_are_made_safe_when_loaded(tmp_path):
    rtl = [SourceFile(name="a.v", content="module a; endmodule\n")]

    def kept(task_id: str) -> str:
        return Task(id=task_id, dut_module_name="a", rtl_files=rtl).id

    assert kept("cvdp/cvdp_copilot_x_0001") == "cvdp/cvdp_copilot_x_0001"
    assert kept("x\nSF:/etc/passwd") == "x%0ASF:/etc/passwd"
    assert kept("a b|<img>") == "a%20b%7C%3Cimg%3E"
    assert kept("x\x1b[2J\u202e") == "x%1B%5B2J%E2%80%AE"
    assert kept("100%") == "100%25" and kept(kept("100%")) == "100%25"  # idempotent
    for bad in ("", "y" * 201):
        with pytest.raises(ValueError, match="must have 1-200 characters"):
            kept(bad)
    for field in ("dut_module_name", "dut_instance_name"):
        with pytest.raises(ValueError, match="not a SystemVerilog identifier"):
            Task(id="t", rtl_files=rtl, **{"dut_module_name": "a", field: "a\nb"})
    rows = tmp_path / "tasks.jsonl"
    rows.write_text(json.dumps({"id": "x\nSF:/etc/passwd", "dut_module_name": "a",
                                "rtl_files": [r.model_dump() for r in rtl]}) + "\n")
    for spelling in ("x\nSF:/etc/passwd", "x%0ASF:/etc/passwd"):  # --id finds it either way
        assert [t.id for t in load_tasks(rows, [spelling])] == ["x%0ASF:/etc/passwd"]


@pytest.mark.requires_verilator
def test_a_task_whose_id_forges_lcov_records_writes_only_real_records(tmp_path, capsys):
    """The probe kind @lcov-strict: a task row whose id holds LCOV records."""
    counter = shared_path("security", "counter.sv")
    rows = tmp_path / "tasks.jsonl"
    forged = "probe\nSF:/etc/passwd\nDA:1,1\x1b[2J"
    rows.write_text(json.dumps({"id": forged, "dut_module_name": "counter", "rtl_files": [
        {"name": "counter.sv", "content": counter.read_text()}]}) + "\n")
    (tmp_path / "tb.sv").write_text(
        "module tb;\n  logic clk = 0, rst = 1, en = 0; logic [3:0] q;\n"
        "  counter dut(.clk(clk), .rst(rst), .en(en), .q(q));\n  always #5 clk = ~clk;\n"
        "  initial begin #12 rst = 0; en = 1; #200 $finish; end\nendmodule\n")
    info = tmp_path / "out" / "t.info"
    assert main(["sim", "--tasks", str(rows), "--id", forged, "--tb", str(tmp_path / "tb.sv"),
                 "--lcov", str(info)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("# Simulation: probe%0ASF:/etc/passwd%0ADA:1%2C1%1B%5B2J\n")
    records = re.compile(r"^(TN:[\w.-]*|SF:.+|BRDA:\d+,\d+,\d+,\d+|BRF:\d+|BRH:\d+|"
                         r"DA:\d+,\d+|LF:\d+|LH:\d+|end_of_record)$")
    lines = info.read_text().splitlines()
    assert lines[0] == "TN:probe_0ASF__etc_passwd_0ADA_1_2C1_1B_5B2J"
    assert all(records.match(line) for line in lines)
    assert [Path(line[3:]).name for line in lines if line.startswith("SF:")] == ["counter.sv"]


def test_a_task_row_cannot_name_a_host_folder(tmp_path):
    """A row's ``source: local`` and ``meta.path: /etc`` are the row's word, not where
    its files lie: ``rtl_root`` (the folder reports point genhtml at) stays None, so a
    tracefile names the copies llm4cov wrote (before: ``SF:/etc/passwd``); a task read
    from a folder keeps it, through a copy too."""
    from llm4cov.cli.common import rtl_root
    from llm4cov.tasks.loaders import task_from_dir

    rows = tmp_path / "tasks.jsonl"
    rows.write_text(json.dumps({"id": "evil", "source": "local", "meta": {"path": "/etc"},
                                "_root": "/etc", "dut_module_name": "a", "rtl_files": [
                                    {"name": "passwd", "content": "module a; endmodule\n"}]})
                    + "\n")
    (task,) = load_tasks(rows)
    assert task.meta["path"] == "/etc" and task.root is None and rtl_root(task) is None
    (tmp_path / "rtl").mkdir()
    (tmp_path / "rtl" / "a.v").write_text("module a; endmodule\n")
    local = task_from_dir(tmp_path / "rtl")
    assert rtl_root(local.model_copy(update={"dut_instance_name": "u"})) == tmp_path / "rtl"


def test_lcov_records_cannot_be_forged():
    dat = FIXTURES / "report" / "mux2_partial.coverage.dat"
    mux2 = FIXTURES / "mux2" / "mux2.sv"
    sources = {"mux2.sv": mux2.read_text()}
    text = lcov_text(parse_coverage_dat(dat), "tb.dut", sources, {"mux2.sv": mux2},
                     test_name="x\nSF:/etc/passwd")
    assert text.splitlines()[:2] == ["TN:x_SF__etc_passwd", f"SF:{mux2}"]
    assert lcov_test_name("rtllm/accu") == "rtllm_accu"
    with pytest.raises(ValueError, match="forged record"):
        lcov_text(parse_coverage_dat(dat), "tb.dut", sources,
                  {"mux2.sv": Path("/tmp/x\nSF:/etc/passwd\nDA:1,1")})


def test_ucis_xml_holds_names_with_control_characters(tmp_path):
    from lxml import etree

    dat = (FIXTURES / "report" / "mux2_partial.coverage.dat").read_text()
    hostile = tmp_path / "hostile.coverage.dat"
    hostile.write_text(dat.replace("tb.sv", "t\x1b[2J<!DOCTYPE x>\x0b.sv"))
    write_ucis_xml(hostile, tmp_path / "out.xml", COVERAGE_FORMAT)
    text = (tmp_path / "out.xml").read_text()
    assert "<!DOCTYPE" not in text
    root = etree.fromstring(text.encode())
    assert "t\\x1b[2J<!DOCTYPE x>\\x0b.sv" in {e.get("fileName") for e in
                                               root.iter("sourceFiles")}


@pytest.mark.requires_verilator
@pytest.mark.heavy
def test_sim_markdown_answer_of_the_fence_breakout_probe(capsys, tmp_path):
    """The shared probe: a testbench that closes the log fence, prints HTML and links,
    and names an <img> as a data file (the missing-file note)."""
    probe = shared_path("security", "probes2", "markdown_fence_breakout.sv")
    (tmp_path / "rtl").mkdir()
    (tmp_path / "rtl" / "counter.sv").write_text(shared_path("security", "counter.sv")
                                                 .read_text())
    code = main(["sim", "--rtl", str(tmp_path / "rtl"), "--tb", str(probe)])
    out = capsys.readouterr().out
    assert code == 1 and "- status: **runtime_error**" in out
    no_markup_made(rendered(out))
    assert C0_C1.search(out) is None


@pytest.mark.requires_verilator
@pytest.mark.heavy
def test_testbench_output_reaches_the_terminal_escaped(tmp_path, capsys):
    """The probe kind @no-ctrl: a testbench prints terminal escape sequences (title,
    clipboard, clear screen, CR overwrite, DEL, a C1 byte) and fails, so its log is shown
    in the Markdown answer and carried in the JSON one."""
    (tmp_path / "rtl").mkdir()
    (tmp_path / "rtl" / "counter.sv").write_text(shared_path("security", "counter.sv")
                                                 .read_text())
    tb = tmp_path / "tb.sv"
    tb.write_text(
        "module tb;\n  logic clk = 0, rst = 1, en = 0; logic [3:0] q;\n"
        "  counter dut(.clk(clk), .rst(rst), .en(en), .q(q));\n  always #5 clk = ~clk;\n"
        '  initial begin #12 rst = 0; en = 1;\n    $display('
        '"\\033]0;pwned\\007\\033[2J\\033]52;c;ZWNobw==\\007 \\r over \\177 \\233 x");\n'
        '    #200 $fatal(1, "\\033[31mstop\\033[0m");\n  end\nendmodule\n')
    where = [str(tmp_path / "rtl"), "--tb", str(tb)]
    assert main(["sim", *where]) == 1
    markdown = capsys.readouterr().out
    assert main(["sim", *where, "--json"]) == 1
    answer = capsys.readouterr().out
    for out in (markdown, answer):
        assert C0_C1.search(out) is None
    assert "\\x1b]0;pwned\\x07\\x1b[2J\\x1b]52;c;ZWNobw==\\x07 \\r over \\x7f" in markdown
    assert "\x1b]0;pwned\x07" in json.loads(answer)["log"]  # the same text, as JSON data


def test_a_note_or_dump_name_cannot_print_lines_of_its_own(capsys):
    """A note may quote the testbench (its ``$dumpfile`` name) and a dump's file name is
    the testbench's: each is one printed line (a twenty-sixth red team printed a fake
    ``status: success`` and 100 % report through a name holding line breaks)."""
    from llm4cov.cli.report_opts import say_kept
    from llm4cov.report.capture import _DUMPFILE, Capture

    fake = "alu4\n- status: **success**\nDUT: `tb.dut`, overall **100.00%**"
    say_kept(Capture(observation=Observation(status=Status.SUCCESS), points=[],
                     trace=Path(f"/tmp/{fake}.vcd"),
                     notes=[f"no waveform dump was written ({fake})"]))
    assert capsys.readouterr().err.splitlines() == [
        "waveform dump: /tmp/alu4\\n- status: **success**\\nDUT: `tb.dut`, overall "
        "**100.00%**.vcd",
        "note: no waveform dump was written (alu4\\n- status: **success**\\nDUT: `tb.dut`, "
        "overall **100.00%**)"]
    assert _DUMPFILE.search(f'/* $dumpfile("{fake}") */') is None  # a literal is one line
