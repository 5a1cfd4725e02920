"""UART/UARTE: baud-timed bytes, host byte streams, RX FIFO, EasyDMA."""
from emu.soc.nrf52832 import Nrf52832
from helpers.periph import soc_with

# nRF52832 PS v1.4 BAUDRATE tables: Baud115200 is 0x01D7E000 on the UART, an
# actual 115 942 baud, and 0x01D60000 on the UARTE, 115 108 baud
B115200 = {4: 0x01D7E000, 8: 0x01D60000}
BYTE = 10 * round(512_000_000 / 115942)      # ticks per 10-bit UART frame (44 160)
EBYTE = 10 * round(512_000_000 / 115108)     # UARTE (44 480)
RAM = 0x20004000


TXD_PIN = 6


def make(enable, txd_pin=TXD_PIN):
    soc, u = soc_with("uart0")
    u.write(0x524, B115200[enable])
    u.write(0x50C, txd_pin)              # PSELTXD / PSEL.TXD: bytes leave on this pin
    u.write(0x500, enable)
    return soc, u


def test_uart_tx_timed_and_host_output():
    soc, u = make(4)
    seen = []
    u.on_tx(seen.append)
    u.write(0x008, 1)                    # STARTTX
    t0 = soc.clock.now
    u.write(0x51C, ord("h"))
    soc.clock.advance_to(t0 + BYTE - 1)
    assert u.read(0x11C) == 0 and bytes(u.host_output) == b""
    soc.clock.advance_to(t0 + BYTE)
    assert u.read(0x11C) == 1 and bytes(u.host_output) == b"h" and seen == [ord("h")]


def test_uart_byte_written_while_txd_disconnected_never_reaches_the_host():
    # MicroPython on the micro:bit: STARTTX, TXD=0, and only then PSELTXD=24.
    soc, u = make(4, txd_pin=0xFFFFFFFF)
    u.write(0x008, 1)                    # STARTTX
    t0 = soc.clock.now
    u.write(0x51C, 0)                    # TXD while no pin is selected
    u.write(0x50C, 24)                   # connected within that byte time
    soc.clock.advance_to(t0 + BYTE)
    assert u.read(0x11C) == 1            # the shift register still ran: TXDRDY
    assert bytes(u.host_output) == b""   # but nothing left on a pin
    u.write(0x11C, 0)
    u.write(0x51C, ord("M"))             # connected now
    soc.clock.advance_to(t0 + 2 * BYTE)
    assert bytes(u.host_output) == b"M"


def test_uart_byte_queued_before_starttx_keeps_its_psel():
    # TXD written before STARTTX waits for it; what counts is PSELTXD at the write.
    soc, u = make(4)
    u.write(0x51C, ord("a"))             # connected (P0.06), not yet started
    u.write(0x50C, 0xFFFFFFFF)           # disconnected before STARTTX
    u.write(0x008, 1)
    soc.clock.advance_to(soc.clock.now + BYTE)
    assert bytes(u.host_output) == b"a"


def test_uarte_transfer_started_while_txd_disconnected_is_not_seen():
    soc, u = make(8, txd_pin=0xFFFFFFFF)
    soc.cpu.write_mem(RAM, b"xy")
    u.write(0x544, RAM); u.write(0x548, 2)
    u.write(0x008, 1)                    # STARTTX with PSEL.TXD disconnected
    u.write(0x50C, TXD_PIN)
    soc.clock.advance_to(soc.clock.now + 2 * EBYTE)
    assert u.read(0x120) == 1 and u.read(0x54C) == 2     # ENDTX, both bytes clocked out
    assert bytes(u.host_output) == b""


def test_uart_rx_fifo_and_overrun():
    soc, u = make(4)
    u.host_send(b"abcdefgh")             # 8 bytes; FIFO holds 6
    t0 = soc.clock.now
    soc.clock.advance_to(t0 + 20 * BYTE)
    assert u.read(0x108) == 0            # receiver not started: nothing arrives
    u.write(0x000, 1)                    # STARTRX
    t1 = soc.clock.now
    soc.clock.advance_to(t1 + BYTE)
    assert u.read(0x108) == 1
    soc.clock.advance_to(t1 + 8 * BYTE)
    assert u.read(0x480) & 1 and u.read(0x124) == 1     # OVERRUN
    got = []
    while u.read(0x108):
        u.write(0x108, 0)
        got.append(u.read(0x518))
    assert bytes(got) == b"abcdef"


def test_uarte_echo_dma():
    soc, u = make(8)
    u.write(0x534, RAM); u.write(0x538, 4)
    u.write(0x200, 1 << 6)               # ENDRX_STOPRX
    u.write(0x000, 1)
    assert u.read(0x14C) == 1            # RXSTARTED
    u.host_send(b"ping")
    t0 = soc.clock.now
    soc.clock.advance_to(t0 + 4 * EBYTE - 1)
    assert u.read(0x110) == 0
    soc.clock.advance_to(t0 + 4 * EBYTE)
    assert u.read(0x110) == 1 and u.read(0x144) == 1    # ENDRX, RXTO through the short
    assert soc.cpu.read_mem(RAM, 4) == b"ping" and u.read(0x53C) == 4
    u.write(0x544, RAM); u.write(0x548, 4)
    u.write(0x008, 1)
    soc.clock.advance_to(soc.clock.now + 4 * EBYTE)
    assert u.read(0x120) == 1 and bytes(u.host_output) == b"ping" and u.read(0x54C) == 4


def test_psel_shared_between_uart_and_uarte():
    soc = Nrf52832()
    u = soc.uart0
    u.write(0x50C, 6)                    # PSELTXD / PSEL.TXD before ENABLE
    u.write(0x500, 8)
    assert u.read(0x50C) == 6


def test_firmware_uart_echo(fw):
    from conftest import assert_firmware_passed
    from emu import Machine
    m = Machine(fw("periph_uart"), board="nrf52832")
    m.soc.uart0.host_send(b"ech\n")
    r = m.run(ms=50)
    assert_firmware_passed(m, r, min_passes=3)
    assert bytes(m.soc.uart0.host_output) == b"hi\nech\n"


def test_slot_registers_are_the_enabled_variants_ops(fw):
    """The UART slot offers the enabled variant's bus ops (the legacy UART's
    TXDRDY, then the UARTE's ENDTX after ENABLE switched: the bus forgets the
    first ones at the switch), and the firmware runs natively as in pure
    Python: the same bytes, cycles, registers, RAM and accesses per register."""
    from conftest import assert_same_state, both_ways, run_fw

    def start(pure):
        m, _r = run_fw(fw("periph_uart"), 50, pure_python=pure,
                       setup=lambda m: m.soc.uart0.host_send(b"ech\n"))
        if not pure:
            stats = m.soc.bus.access_stats()
            txdrdy, endtx = stats[(0x40002000, 0x11C)], stats[(0x40002000, 0x120)]
            assert txdrdy[0] > 30 and txdrdy[1] == 0     # the legacy UART's, by ops
            assert endtx[0] > 0 and endtx[1] == 0        # the UARTE's, by ops
        return m
    runs = both_ways((False, True), start,
                     extra=lambda m, pure: {"out": bytes(m.soc.uart0.host_output)})
    assert runs[0]["out"] == b"hi\nech\n"
    assert_same_state(runs[0], runs[1], "the ops and the model")
