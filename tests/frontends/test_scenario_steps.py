"""Scenario steps for the phone and the screen, on firmware from firmware/.

The phone steps run against sd_nus (the S132 echo firmware: every byte the
phone writes comes back as a TX notification), so what the watch "sends" is
known exactly.  The screen steps run against pinetime_demo, which draws
10:09 in white in the box (20, 70, 200, 90) and a progress bar in
(20, 200, 200, 10) that grows by 10 px each emulated second."""
from __future__ import annotations

import io

import pytest

from frontends.scenario import ScenarioError, load_scenario, main


def run(tmp_path, fw, firmware, body, name="s.yaml"):
    p = tmp_path / name
    p.write_text("board: pinetime\nsteps:\n" + body)
    out = io.StringIO()
    rc = main([str(p), "--firmware", fw(firmware)], out=out)
    return rc, out.getvalue()


def lines(out, status):
    return [l for l in out.splitlines() if l.startswith(f"  {status} ")]


def seen_after(out, needle):
    """The 'expected ...; saw ...' line under the FAIL line containing needle."""
    ls = out.splitlines()
    i = next(i for i, l in enumerate(ls) if l.startswith("  FAIL") and needle in l)
    return ls[i + 1]


# ----------------------------------------------------------------------- phone
PHONE_OK = """\
  - phone_connect: {timeout_ms: 200}
  - phone_send: "hello\\r"
  - wait_phone: {text: "hello\\r", timeout_ms: 500}
  - phone_send: "{\\"t\\":\\"call\\",\\"n\\":\\"ACCEPT\\"}\\n"
  - expect_phone_message: {t: call, n: ACCEPT, timeout_ms: 500}
  - call: {name: Ann, number: "555"}
  - wait_phone: '"name":"Ann","number":"555"'
  - notify: {title: Alice, body: "Lunch?"}
  - wait_phone: '"title":"Alice","body":"Lunch?"'
  - music: {artist: Queen, track: Bohemian Rhapsody, state: play}
  - wait_phone: '"artist":"Queen","track":"Bohemian Rhapsody"'
  - wait_phone: '"t":"musicstate","state":"play"'
  - set_time: "2025-12-03T14:42:00"
  - wait_phone: "watch.rtc.set_localtime((2025, 12, 3, 14, 42, 0, 2, 337))\\r"
  - end_call:
  - wait_phone: '{"t":"call","cmd":"end"}'
"""


def test_phone_steps_send_what_gadgetbridge_sends(fw, tmp_path):
    rc, out = run(tmp_path, fw, "sd_nus", PHONE_OK)
    assert rc == 0, out
    assert len(lines(out, "PASS")) == 16
    # sending steps run until the watch took every write: time moves on
    times = [float(l.split("t=")[1].split()[0]) for l in lines(out, "PASS")]
    assert times == sorted(times) and times[1] > times[0]


def test_wait_phone_searches_after_the_last_send_and_moves_past_matches(fw, tmp_path):
    # 'hello' was echoed before the second send: the cursor is past it
    rc, out = run(tmp_path, fw, "sd_nus", """\
  - phone_connect: {timeout_ms: 200}
  - phone_send: "hello\\r"
  - wait_phone: {text: hello, timeout_ms: 500}
  - phone_send: "bye\\r"
  - wait_phone: {text: hello, timeout_ms: 100}
""")
    assert rc == 1, out
    seen = seen_after(out, "wait_phone 'hello'")
    assert "expected phone text 'hello'" in seen and "'bye\\r'" in seen
    assert "hello" not in seen.split("saw")[1]
    # matched text is consumed: the same text twice needs it twice
    rc, out = run(tmp_path, fw, "sd_nus", """\
  - phone_connect: {timeout_ms: 200}
  - phone_send: "ab ab\\r"
  - wait_phone: {text: ab, timeout_ms: 500}
  - wait_phone: {text: ab, timeout_ms: 500}
  - wait_phone: {text: ab, timeout_ms: 100}
""")
    assert rc == 1 and len(lines(out, "PASS")) == 4, out


def test_expect_phone_message_failure_lists_messages_seen(fw, tmp_path):
    rc, out = run(tmp_path, fw, "sd_nus", """\
  - phone_connect: {timeout_ms: 200}
  - phone_send: "{\\"t\\":\\"call\\",\\"n\\":\\"REJECT\\"}\\n"
  - expect_phone_message: {t: call, n: ACCEPT, timeout_ms: 300}
""")
    assert rc == 1, out
    fail = lines(out, "FAIL")[0]
    seen = seen_after(out, "expect_phone_message")
    assert "expect_phone_message" in fail
    assert "phone message with {'t': 'call', 'n': 'ACCEPT'}" in seen
    assert "{'t': 'call', 'n': 'REJECT'}" in seen and "not met by t=" not in seen
    # the failure is reported at the end of the 300 ms wait
    t_send = float(lines(out, "PASS")[1].split("t=")[1].split()[0])
    t_fail = float(fail.split("t=")[1].split()[0])
    assert t_fail == pytest.approx(t_send + 0.300, abs=1e-6)


def test_repl_without_a_prompt_reports_phone_output(fw, tmp_path):
    # the echo firmware is no REPL: the command comes back, no '>>> ' follows
    rc, out = run(tmp_path, fw, "sd_nus", """\
  - phone_connect: {timeout_ms: 200}
  - repl: {cmd: "1+1", expect: "2", timeout_ms: 200}
""")
    assert rc == 1
    assert "expected the prompt '>>> ' after '1+1' within 200 ms; saw phone output '1+1\\r'" \
        in seen_after(out, "repl")


def test_phone_steps_need_a_connection_and_a_phone(fw, tmp_path):
    rc, out = run(tmp_path, fw, "sd_nus", "  - call: {name: Ann, number: '1'}\n")
    assert rc == 1 and "add a phone_connect step first" in out
    # the nrf52832 board has no SoftDevice layer, so no phone
    p = tmp_path / "b.yaml"
    p.write_text("board: nrf52832\nsteps:\n  - phone_connect:\n")
    o = io.StringIO()
    assert main([str(p), "--firmware", fw("cpu_exceptions")], out=o) == 1
    assert "has no phone" in o.getvalue()
    # a watch that never advertises
    rc, out = run(tmp_path, fw, "pinetime_demo", "  - phone_connect: {timeout_ms: 50}\n")
    assert rc == 1 and "the watch is not advertising" in out


# ----------------------------------------------------------------------- screen
def test_region_pixel_and_change_steps(fw, tmp_path):
    rc, out = run(tmp_path, fw, "pinetime_demo", """\
  - run: {ms: 300}
  - expect_region: {box: [20, 70, 200, 90], min_lit: 4000, max_lit: 5000}
  - expect_region: {box: [20, 200, 200, 10], max_lit: 0}
  - expect_pixel: {x: 40, y: 85, rgb: "#ffffff"}
  - expect_pixel: {x: 30, y: 85, rgb: [0, 0, 0]}
  - mark_screen:
  - wait_screen_change: {box: [20, 200, 200, 10], timeout_ms: 1000}
  - expect_screen_unchanged: {box: [20, 70, 200, 90]}
  - run: {ms: 100}
  - wait_region: {box: [20, 200, 200, 10], min_lit: 100, timeout_ms: 1}
  - mark_screen:
  - run: {s: 1}
  - expect_screen_changed: {box: [20, 200, 200, 10]}
  - expect_pixel: {x: 25, y: 205, rgb: "#ffa200", tolerance: 4}
  - wait_region: {box: [20, 200, 200, 10], min_lit: 300, timeout_ms: 1500}
""")
    assert rc == 0, out
    t = [float(l.split("t=")[1].split()[0]) for l in lines(out, "PASS")]
    # SysTick starts at about 0.21 s and the bar first grows 8 ticks (1 s) later:
    # the wait stops there, not at its 1 s timeout
    assert 1.2 <= t[6] <= 1.25 and t[7] == t[6]
    assert t[11] == pytest.approx(t[10] + 1.0, abs=1e-6)     # run: {s: 1}
    assert 3.2 <= t[14] <= 3.25                               # third bar step


def test_region_failure_names_lit_count_and_time(fw, tmp_path):
    rc, out = run(tmp_path, fw, "pinetime_demo", """\
  - run: {ms: 300}
  - expect_region: {box: [20, 200, 200, 10], min_lit: 50}
  - screenshot: never.png
""")
    assert rc == 1
    fail = lines(out, "FAIL")[0]
    assert "t=0.300000" in fail and "expect_region [20, 200, 200, 10] 50 <= lit" in fail
    assert "saw lit = 0 of 2000 pixels" in seen_after(out, "expect_region")
    assert len(lines(out, "SKIP")) == 1 and not (tmp_path / "never.png").exists()


def test_unchanged_and_changed_failures(fw, tmp_path):
    rc, out = run(tmp_path, fw, "pinetime_demo", """\
  - run: {ms: 300}
  - mark_screen:
  - run: {s: 1}
  - expect_screen_unchanged:
""")
    assert rc == 1
    seen = seen_after(out, "expect_screen_unchanged")
    assert "unchanged since the checkpoint at t=0.300000 s" in seen
    assert "100 pixels changed (within x=20 y=200 w=10 h=10)" in seen
    rc, out = run(tmp_path, fw, "pinetime_demo", """\
  - run: {ms: 300}
  - mark_screen:
  - run: {ms: 500}
  - expect_screen_changed: {box: [20, 200, 200, 10]}
""")
    assert rc == 1 and "saw no pixel changed" in out and "t=0.800000" in out
    rc, out = run(tmp_path, fw, "pinetime_demo", """\
  - run: {ms: 300}
  - mark_screen:
  - wait_screen_change: {box: [20, 70, 200, 90], timeout_ms: 2000}
""")
    assert rc == 1 and "box [20, 70, 200, 90] changes since the checkpoint" in out
    assert "t=2.300000" in lines(out, "FAIL")[0]


def test_pixel_failure_names_the_colour_seen(fw, tmp_path):
    rc, out = run(tmp_path, fw, "pinetime_demo", """\
  - run: {ms: 300}
  - expect_pixel: {x: 40, y: 85, rgb: "#ff0000", tolerance: 10}
""")
    assert rc == 1
    assert "expected pixel (40,85) == #ff0000" in out and "saw #ffffff" in out


def test_screen_steps_on_a_board_without_screen(fw, tmp_path):
    p = tmp_path / "b.yaml"
    p.write_text("board: nrf52832\nsteps:\n  - expect_screen_changed: {box: [0, 0, 1, 1]}\n")
    o = io.StringIO()
    assert main([str(p), "--firmware", fw("cpu_exceptions")], out=o) == 1
    assert "has no screen" in o.getvalue()


# ----------------------------------------------------------------------- parsing
def test_parsed_arguments(tmp_path):
    p = tmp_path / "s.yaml"
    p.write_text("""\
- run: {s: 2}
- set_time: 2025-12-03T14:42:00
- set_time: "2025-12-03T14:42:00+01:00"
- phone_send: "\\x04\\x10GB"
- repl: {cmd: "1+1", expect: 2}
- expect_phone_message: {t: call, n: ACCEPT, timeout_ms: 3000}
- expect_region: {box: [0, 60, 240, 90], min_lit: 2000}
- wait_screen_change:
""")
    sc = load_scenario(str(p))
    a = [s.args for s in sc.steps]
    assert a[0] == {"ms": 2000.0} and sc.steps[0].label == "run 2 s"
    # unquoted (YAML timestamp) and quoted give the same watch time; a zone is ignored
    assert a[1]["unix"] == a[2]["unix"] == 1764772920
    assert a[3]["data"] == b"\x04\x10GB"
    assert a[4]["expect"] == "2"
    assert a[5] == {"match": {"t": "call", "n": "ACCEPT"}, "timeout_ms": 3000.0}
    assert a[6]["box"] == (0, 60, 240, 90) and a[6]["timeout_ms"] == 0 and a[6]["threshold"] == 64
    assert a[7] == {"box": None, "tolerance": 0, "timeout_ms": 1000.0}


@pytest.mark.parametrize("body, msg", [
    ("- run: {ms: 1, s: 1}", "exactly one of ms or s"),
    ("- expect_region: {box: [0, 0, 10]}", "box must be [x, y, w, h]"),
    ("- expect_region: {box: [0, 0, 10, 0], min_lit: 1}", "box must be"),
    ("- expect_region: {box: [0, 0, 10, 10]}", "give min_lit, max_lit or both"),
    ("- expect_pixel: {x: 1, y: 1, rgb: red}", "rgb must be"),
    ("- expect_phone_message: {timeout_ms: 5}", "at least one key"),
    ("- set_time: yesterday", "expected a time like"),
    ("- music: {state: loud}", "play or pause"),
    ("- music: {artist: Queen}", "artist and track together"),
    ("- call: {name: Ann}", "missing number"),
    ("- phone_send: ''", "non-empty string"),
    ("- mark_screen: now", "takes no arguments"),
    ("- upload: no_such_app.py", "no file"),
    ("- exec: {code: '1', file: x.py}", "exactly one of file or code"),
    ("- exec: {}", "exactly one of file or code"),
    ("- exec: missing.py", "no file"),
])
def test_bad_new_steps(tmp_path, body, msg):
    p = tmp_path / "bad.yaml"
    p.write_text(body)
    with pytest.raises(ScenarioError, match=msg.replace("[", r"\[").replace("]", r"\]")):
        load_scenario(str(p))


# ----------------------------------------------------------------------- Python API
def test_testbench_region_and_phone_helpers(fw):
    from emu import Machine
    from frontends import testbench as tb
    m = Machine(fw("pinetime_demo"), flash_file=None)
    m.run(ms=300)
    assert tb.lit_count(m, (20, 200, 200, 10)) == 0
    assert tb.lit_count(m, (20, 70, 200, 90), threshold=254) == tb.lit_count(m, (20, 70, 200, 90))
    ref = tb.screen(m).copy()
    t = tb.wait_for_region(m, (20, 200, 200, 10), 1500, min_lit=100)
    assert 1.2 <= t <= 1.25 and tb.lit_count(m, (20, 200, 200, 10)) >= 100
    n, bbox = tb.region_diff(ref, tb.screen(m), (0, 0, 240, 240))
    assert n == 100 and bbox == (20, 200, 10, 10)
    with pytest.raises(tb.ExpectationFailed) as e:
        tb.wait_for_screen_change(m, tb.screen(m).copy(), (20, 70, 200, 90), 100)
    assert e.value.seen == "no pixel changed" and e.value.time_s == pytest.approx(t + 0.1)

    m = Machine(fw("sd_nus"), flash_file=None)
    m.phone.connect(timeout_ms=100)
    m.phone.send(b'x {"t":"a"}\nyy\n')
    end = tb.wait_for_phone_text(m, "yy", 2000)
    assert bytes(m.phone.output[:end]).endswith(b"yy")
    assert tb.wait_for_phone_message(m, {"t": "a"}, 100) == 0
    with pytest.raises(tb.ExpectationFailed) as e:
        tb.wait_for_phone_message(m, {"t": "a"}, 50, start=1)
    assert "no message from message 1 on" in e.value.seen
    assert "phone output" in e.value.seen and "yy" in e.value.seen


def test_load_snapshot_restarts_the_checkpoint(fw, tmp_path):
    # the checkpoint taken at 1.8 s shows one bar step; after going back to
    # 0.3 s (no bar) the comparison is with the restored screen, not with it
    rc, out = run(tmp_path, fw, "pinetime_demo", """\
  - run: {ms: 300}
  - save_snapshot: a.snap
  - run: {ms: 1500}
  - mark_screen:
  - load_snapshot: a.snap
  - expect_screen_unchanged:
  - expect_region: {box: [20, 200, 200, 10], max_lit: 0}
""")
    assert rc == 0, out
    assert "PASS [t=0.300000 s]  6. expect_screen_unchanged" in out


def test_upload_and_exec_steps_parse(tmp_path):
    (tmp_path / "app.py").write_text("x = 1\n")
    (tmp_path / "reg.py").write_text("print('ok')\n")
    p = tmp_path / "s.yaml"
    p.write_text("- upload: {file: app.py, as: hello.py}\n- upload: app.py\n"
                 "- exec: {file: reg.py, contains: ok}\n- exec: {code: \"print(2)\", expect: 2}\n")
    sc = load_scenario(str(p))
    a = [st.args for st in sc.steps]
    assert a[0]["as"] == "hello.py" and a[0]["path"] == str(tmp_path / "app.py")
    assert a[1]["as"] == "app.py"
    assert a[2]["code"] == "print('ok')\n" and a[2]["contains"] == "ok"
    assert a[3]["code"] == "print(2)" and a[3]["expect"] == "2"
