"""SPIM EasyDMA: bytes from RAM, RX into RAM, ORC, timing, LIST, STOP, flash pointer."""
from helpers.periph import spi_master

RAM = 0x20002000


def test_dma_transfer_timing_and_orc():
    soc, s, dev = spi_master("serial2", cs=25, enable=7)
    soc.cpu.write_mem(RAM, bytes([1, 2, 3]))
    s.write(0x544, RAM); s.write(0x548, 3)            # TXD 3 bytes
    s.write(0x534, RAM + 0x100); s.write(0x538, 5)    # RXD 5 bytes -> 2 ORC
    s.write(0x5C0, 0xEE)
    t0 = soc.clock.now
    s.write(0x010, 1)
    assert s.read(0x14C) == 1                          # STARTED
    soc.clock.advance_to(t0 + 5 * 512 - 1)
    assert s.read(0x118) == 0
    soc.clock.advance_to(t0 + 5 * 512)
    assert s.read(0x118) == 1 and s.read(0x110) == 1 and s.read(0x120) == 1
    assert dev.got == [1, 2, 3, 0xEE, 0xEE]
    assert soc.cpu.read_mem(RAM + 0x100, 5) == bytes([0, 2, 3, 4, 0xEF])
    assert s.read(0x54C) == 3 and s.read(0x53C) == 5


def test_arraylist_advances_ptr_and_end_start_short():
    soc, s, dev = spi_master("serial2", cs=25, enable=7)
    soc.cpu.write_mem(RAM, bytes(range(8)))
    s.write(0x544, RAM); s.write(0x548, 2); s.write(0x550, 1)
    s.write(0x200, 1 << 17)                            # END_START
    s.write(0x010, 1)
    soc.clock.advance_to(soc.clock.now + 3 * 1024)     # three 2-byte transfers
    assert dev.got[:6] == [0, 1, 2, 3, 4, 5]
    s.write(0x200, 0)


def test_flash_tx_pointer_sends_orc_only():
    soc, s, dev = spi_master("serial2", cs=25, enable=7)
    s.write(0x544, 0x1000); s.write(0x548, 2)          # flash: EasyDMA cannot read it
    s.write(0x5C0, 0x5A)
    s.write(0x010, 1)
    soc.clock.advance_to(soc.clock.now + 1024)
    assert dev.got == [0x5A, 0x5A] and s.read(0x54C) == 0


def test_stop_mid_transfer():
    soc, s, dev = spi_master("serial2", cs=25, enable=7)
    s.write(0x534, RAM); s.write(0x538, 10)
    t0 = soc.clock.now
    s.write(0x010, 1)
    soc.clock.advance_to(t0 + 3 * 512 + 100)
    s.write(0x014, 1)
    assert s.read(0x104) == 1 and s.read(0x118) == 0
    assert s.read(0x53C) == 3
    soc.clock.advance_to(t0 + 20 * 512)
    assert s.read(0x118) == 0                          # no END after STOP
