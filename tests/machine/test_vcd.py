"""run --vcd (emu/vcd.py) read back with pyvcd's reader."""
import subprocess
import sys

from vcd.reader import TokenKind, tokenize

from conftest import assert_firmware_passed
from emu import Machine


def changes(path) -> dict:
    """{signal 'scope.name': [(time ns, value)]} from a VCD file."""
    ids, scope, out, t = {}, [], {}, 0
    with open(path, "rb") as f:
        for tok in tokenize(f):
            k = tok.kind
            if k is TokenKind.SCOPE:
                scope.append(tok.scope.ident)
            elif k is TokenKind.UPSCOPE:
                scope.pop()
            elif k is TokenKind.VAR:
                ids[tok.var.id_code] = ".".join(scope + [tok.var.reference])
            elif k is TokenKind.CHANGE_TIME:
                t = tok.time_change
            elif k in (TokenKind.CHANGE_SCALAR, TokenKind.CHANGE_VECTOR):
                val = tok.data.value
                if isinstance(val, str) and val in "01":
                    val = int(val)                  # scalars come as '0', '1', 'z'
                out.setdefault(ids[tok.data.id_code], []).append((t, val))
    return out


def test_ppi_toggle_every_50us_and_the_egu_line(fw, tmp_path):
    """periph_ppi.c: TIMER0 COMPARE0 every 50 us toggles P0.20 through
    GPIOTE and fires EGU0 (IRQ 20), whose handler clears it."""
    path = tmp_path / "ppi.vcd"
    m = Machine(fw("periph_ppi"), board="nrf52832")
    v = m.vcd(str(path))
    r = m.run(ms=10)
    v.close()
    assert_firmware_passed(m, r, min_passes=2)
    ch = changes(path)
    edges = [t for t, val in ch["gpio.P0_20"] if val in (0, 1)][1:]     # after its init
    assert len(edges) >= 15
    gaps = {b - a for a, b in zip(edges, edges[1:])}
    assert gaps == {50_000}, sorted(gaps)[:5]                 # exactly 50 us apart
    irq = ch["nvic.irq20_egu0"]
    rises = [t for t, val in irq if val == 1]
    assert len(rises) >= len(edges) - 2
    # each EGU interrupt rises at a toggle (the FORK) and falls soon after
    assert set(rises[:20]) <= set(edges) | {edges[0] - 50_000}


def test_spi_bytes_with_chip_select_on_the_pinetime(fw, tmp_path):
    """pinetime_flash.c reads the NOR's JEDEC ID: 9F then 0B 40 16 on MISO,
    each byte while P0.05 (NOR CS) is low."""
    path = tmp_path / "nor.vcd"
    m = Machine(fw("pinetime_flash"), flash_file=None)
    v = m.vcd(str(path))
    m.run(ms=300)
    v.close()
    ch = changes(path)
    mosi, miso = ch["spi.mosi"], ch["spi.miso"]
    i = next(k for k, (_t, val) in enumerate(mosi) if val == 0x9F)
    t0 = mosi[i][0]
    ids = [val for t, val in miso if t > t0][:3]
    assert ids == [0x0B, 0x40, 0x16]
    cs = ch["gpio.P0_05"]

    def cs_at(t):
        return [val for tt, val in cs if tt <= t][-1]
    assert cs_at(t0) == 0
    assert cs[0][1] == "z"                      # undriven until the firmware configures it


def test_vcd_does_not_change_the_run(fw, tmp_path):
    a = Machine(fw("pinetime_display"), flash_file=None)
    a.run(ms=1500)
    b = Machine(fw("pinetime_display"), flash_file=None)
    v = b.vcd(str(tmp_path / "d.vcd"))
    b.run(ms=1500)
    v.close()
    assert (a.cpu.cycles, a.clock.now) == (b.cpu.cycles, b.clock.now)
    assert (a.board.screen() == b.board.screen()).all()


def test_vcd_from_the_command_line(fw, tmp_path):
    out = tmp_path / "x.vcd"
    r = subprocess.run([sys.executable, "-m", "frontends.cli", "run", fw("periph_ppi"), "--board",
                        "nrf52832", "--headless", "--seconds", "0.005", "--vcd", str(out)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert len(changes(out)["gpio.P0_20"]) > 20
    r = subprocess.run([sys.executable, "-m", "frontends.cli", "run", fw("periph_ppi"), "--board",
                        "nrf52832", "--headless", "--vcd", "/no/such/dir/x.vcd"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "--vcd /no/such/dir/x.vcd" in r.stderr
