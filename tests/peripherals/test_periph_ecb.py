"""ECB register-level test (PS v1.4 section 19) with the FIPS-197 vector."""
from emu.soc.nrf52832 import Nrf52832

KEY = bytes.fromhex("000102030405060708090a0b0c0d0e0f")
PT = bytes.fromhex("00112233445566778899aabbccddeeff")
CT = bytes.fromhex("69c4e0d86a7b0430d8cdb78070b4c55a")


def test_fips197_vector_and_events():
    soc = Nrf52832()
    ecb = soc.peripherals["ecb"]
    ptr = 0x20001000
    soc.cpu.write_mem(ptr, KEY + PT + b"\0" * 16)
    ecb.write(0x504, ptr)
    ecb.write(0x304, 1)                         # INTENSET ENDECB
    ecb.write(0x000, 1)                         # STARTECB
    assert ecb.read(0x100) == 0
    soc.clock.advance_to(soc.clock.now + 10 * 512)   # 10 us
    assert ecb.read(0x100) == 1 and (soc.cpu.irq_level >> 14) & 1
    assert bytes(soc.cpu.read_mem(ptr + 32, 16)) == CT


def test_stop_and_bad_pointer_give_error():
    soc = Nrf52832()
    ecb = soc.peripherals["ecb"]
    ecb.write(0x504, 0x20002000)
    ecb.write(0x000, 1)
    ecb.write(0x004, 1)                         # STOPECB while running
    assert ecb.read(0x104) == 1
    soc.clock.advance_to(512 * 100)
    assert ecb.read(0x100) == 0
    ecb.write(0x104, 0)
    ecb.write(0x504, 0x00001000)                # flash: EasyDMA cannot read it
    ecb.write(0x000, 1)
    assert ecb.read(0x104) == 1
