"""Which chip and board a firmware image was built for, from what it says about itself.

    from emu.detect import detect
    d = detect("zephyr.elf")
    d.chip, d.board           # "nrf52", "nrf52dk"
    for e in d.evidence: print(e)

The chip comes first (nRF51822, Cortex-M0: the micro:bit; nRF52832,
Cortex-M4F: the PineTime, the nRF52 DK, the bare chip), from evidence of
three strengths:

* decisive: the ELF's build attributes (``.ARM.attributes``: Tag_CPU_arch
  ARMv6-M against ARMv7E-M, Tag_FP_arch), a hard-float ABI in ``e_flags``,
  symbols and debug source names that name the family (``nrf52_errata_*``,
  Zephyr's ``nordicsemi_nrf52_init``, ``system_nrf52.c``, ``nrf51.h``),
  code or RAM beyond what any nRF51 has (flash above 256 KiB, RAM above
  32 KiB, from the loaded data, the ELF's sections and its symbols), and,
  for an image without build attributes (Intel HEX, raw binary), its code:
  the instructions reached from the vector table (following calls and
  branches, stopping at returns) hold many Thumb-2 or FPU instructions,
  which a Cortex-M0 does not have;
* supporting: the vector table's length (16 + 32 plausible handler entries
  on an nRF51, 16 + 39 on an nRF52832: a handler at IRQ 32 or above), code
  reached from the vectors with (almost) no Thumb-2 among hundreds of
  instructions, RAM used above the micro:bit's 16 KiB, the part number in
  the image's text (``nRF51822``, ``nRF52832``);
* weak: the initial stack pointer.  Zephyr puts it at the top of its
  interrupt stack, low in RAM on an nRF52 (0x200010f8), so it says little.

The strongest level with any evidence decides; if it points at both chips
(or at a core that neither chip has, such as ARMv8-M) the image is
refused, as it is when only weak evidence is left: :func:`detect_board`
raises :class:`BoardDetectionError` (a :class:`FirmwareError`, whose one
line names the boards to choose from with ``--board``).

Then the board, for an nRF52 image, again by strength: decisive are names
in the image's text or symbols ("pinetime", "InfiniTime", "wasp-os",
"nrf52dk", "PCA10040", Zephyr's CONFIG_BOARD_* and board directory) and
Zephyr's pin control tables, which hold each board's console UART, I2C
and SPI pins (the default state's array), e.g. the DK's UART TX P0.06 /
RX P0.08 / RTS P0.05 / CTS P0.07 and the PineTime's TX P0.11 / RX P0.30;
supporting are debug source names (pinetime.h; not the nRF5 SDK's
pca10040.h, which InfiniTime compiles in too); weak is the layout (an
application at 0x26000 for the S132 SoftDevice as wasp-os builds it, an
MCUBoot image as InfiniTime ships: the PineTime).  Without any, the image
is a generic nRF52 one and runs on the PineTime, the default board, with a
note (:attr:`Detection.note`) naming ``--board nrf52832`` and
``--board nrf52dk``.  Boards named in the image that do not fit its chip
are listed and ignored.  An nRF51 image runs on the micro:bit, the only
nRF51 board.

A raw binary is judged by its vector table, its size and its code (it has
no symbols or attributes); an Intel HEX the same way.

Not modelled: other members of the families (nRF52810/52833/52840, nRF51
variants with 32 KiB of RAM) are taken for the family's emulated chip.
"""
from __future__ import annotations

import logging
import re
import struct
from dataclasses import dataclass, field
from typing import Optional, Union

from emu.loader import FirmwareError, FirmwareImage, load_firmware

log = logging.getLogger("emu.detect")

NRF51, NRF52, OTHER = "nrf51", "nrf52", "other"
CHIP_NAMES = {NRF51: "nRF51822", NRF52: "nRF52832", OTHER: "neither chip"}
CORES = {NRF51: "Cortex-M0", NRF52: "Cortex-M4F"}
BOARD_CHIP = {"pinetime": NRF52, "nrf52dk": NRF52, "nrf52832": NRF52, "microbit": NRF51}
BOARD_NAMES = {"pinetime": "the PineTime", "nrf52dk": "the nRF52 DK",
               "nrf52832": "the bare nRF52832", "microbit": "the micro:bit"}
DEFAULT_BOARD = {NRF52: "pinetime", NRF51: "microbit"}
CHOICES = ("pass --board pinetime, nrf52dk or nrf52832 for an nRF52832 image, "
           "or --board microbit for an nRF51822 one")

DECISIVE, SUPPORTING, WEAK = 3, 2, 1
STRENGTHS = {DECISIVE: "decisive", SUPPORTING: "supporting", WEAK: "weak"}

FLASH_END_NRF51 = 0x40000                # 256 KiB
RAM_BASE = 0x20000000
RAM_END_MICROBIT = 0x20004000            # the micro:bit's nRF51822-QFAA: 16 KiB
RAM_END_NRF51 = 0x20008000               # the largest nRF51 RAM: 32 KiB
RAM_END_NRF52 = 0x20040000               # the largest nRF52 RAM (nRF52840): 256 KiB
IRQS = {NRF51: 32, NRF52: 39}
APP_BASE_S132 = 0x26000
MCUBOOT_VECTORS = (0x7F00, 0x8020)

# Tag_CPU_arch (ARM IHI 0045, "Addenda to the ABI for the Arm architecture")
CPU_ARCH = {10: "ARMv7", 11: "ARMv6-M", 12: "ARMv6S-M", 13: "ARMv7E-M", 14: "ARMv8-A",
            16: "ARMv8-M.baseline", 17: "ARMv8-M.mainline", 21: "ARMv8.1-M.mainline"}
FP_ARCH = {1: "VFPv1", 2: "VFPv2", 3: "VFPv3", 4: "VFPv3-D16", 5: "VFPv4", 6: "VFPv4-D16 "
           "(FPv4-SP)", 7: "ARMv8 FP", 8: "ARMv8.1 FP"}
EF_ARM_ABI_FLOAT_HARD = 0x400

# Strings (lower case) that name a board, in the image's data and its symbol
# names (and Zephyr's boards/arm/<board> in its debug information).
BOARD_WORDS = ((b"pinetime", "pinetime"), (b"infinitime", "pinetime"),
               (b"wasp-os", "pinetime"), (b"nrf52dk", "nrf52dk"), (b"nrf52-dk", "nrf52dk"),
               (b"pca10040", "nrf52dk"), (b"micro:bit", "microbit"),
               (b"microbit", "microbit"))
# In source file names only the PineTime's and the micro:bit's: the nRF5
# SDK's pca10040.h (the nRF52 DK's pins) is compiled into PineTime firmware
# too (InfiniTime builds the SDK's board support with NRF_BOARD pca10040).
SOURCE_BOARD_WORDS = ((b"pinetime", "pinetime"), (b"microbit", "microbit"))
PART_NUMBERS = ((b"nrf51822", NRF51), (b"nrf51422", NRF51), (b"nrf52832", NRF52))
FAMILY_SYMBOL = re.compile(r"nrf5([12])", re.I)
# the MDK's and nrfx's per-chip sources (nrf52.h, nrf52_bitfields.h,
# nrf52832_peripherals.h, system_nrf51.c); not the *_erratas.h, which
# nrf_erratas.h includes for every family
FAMILY_SOURCE = re.compile(rb"^(?:system_)?nrf5([12])(?:\d{3})?(?:_bitfields|_peripherals)?"
                           rb"\.[ch]$")
SOURCE_NAME = re.compile(rb"(?<=[\x00/])([A-Za-z0-9_+.-]{1,80}\.(?:c|h|cc|cpp|cxx|hh|hpp|s|S))"
                         rb"(?=\x00)")
ZEPHYR_BOARD_DIR = re.compile(rb"boards/arm/([a-z0-9_]+)")


def _psel(fun: int, pin: int) -> int:
    """Zephyr's nRF pin control word, NRF_PSEL(fun, 0, pin), as the default
    state holds it (no pull, standard drive, not low-power)."""
    return fun << 16 | pin


UART_TX, UART_RX, UART_RTS, UART_CTS, SPIM_SCK, SPIM_MOSI, SPIM_MISO = 0, 1, 2, 3, 4, 5, 6
TWIM_SCL, TWIM_SDA = 11, 12
# Zephyr 3.1's boards/arm/<board>/<board>-pinctrl.dtsi: each state's pins are
# one uint32_t array in the image, in this order, for each device in use (the
# console UART's in nearly every image)
ZEPHYR_PINCTRL = {
    "pinetime": (("console UART TX P0.11, RX P0.30", ((UART_TX, 11), (UART_RX, 30))),
                 ("I2C SDA P0.06, SCL P0.07", ((TWIM_SDA, 6), (TWIM_SCL, 7))),
                 ("SPI SCK P0.02, MOSI P0.03, MISO P0.04",
                  ((SPIM_SCK, 2), (SPIM_MOSI, 3), (SPIM_MISO, 4)))),
    "nrf52dk": (("console UART TX P0.06, RX P0.08, RTS P0.05, CTS P0.07",
                 ((UART_TX, 6), (UART_RX, 8), (UART_RTS, 5), (UART_CTS, 7))),
                ("I2C SDA P0.26, SCL P0.27", ((TWIM_SDA, 26), (TWIM_SCL, 27))),
                ("SPI SCK P0.25, MOSI P0.23, MISO P0.24",
                 ((SPIM_SCK, 25), (SPIM_MOSI, 23), (SPIM_MISO, 24)))),
}

# Code: instructions a Cortex-M0 (ARMv6-M) also has in 32 bits
V6M_WIDE = frozenset(("bl", "msr", "mrs", "dmb", "dsb", "isb"))
CODE_BUDGET = 3000          # instructions decoded at most
CODE_MIN = 200              # fewer say nothing either way
THUMB2_DECISIVE = 0.02      # at least this share (and 4) of Thumb-2: not a Cortex-M0's code
THUMB2_NONE = 0.005         # at most this share: compiled for a Cortex-M0


@dataclass(frozen=True)
class Evidence:
    """One thing the image says: ``points_to`` a chip (nrf51, nrf52, other)
    or a board, with a strength (DECISIVE, SUPPORTING, WEAK)."""
    points_to: str
    strength: int
    what: str

    def __str__(self) -> str:
        name = CHIP_NAMES.get(self.points_to, self.points_to)
        return f"{self.what} -> {name} ({STRENGTHS[self.strength]})"


class BoardDetectionError(FirmwareError):
    """The image does not say which chip or board it is for (the evidence is
    absent or conflicting); the one-line message says which --board to pass."""

    def __init__(self, detection: "Detection"):
        self.detection = detection
        super().__init__(detection.error_message())


@dataclass
class Detection:
    path: str
    image: Optional[FirmwareImage]
    chip: Optional[str] = None
    board: Optional[str] = None
    chip_evidence: list = field(default_factory=list)
    board_evidence: list = field(default_factory=list)
    problem: Optional[str] = None        # why no chip or board could be decided
    guessed: bool = False                 # no board evidence: the chip's default board

    @property
    def evidence(self) -> list:
        return self.chip_evidence + self.board_evidence

    @property
    def note(self) -> Optional[str]:
        """One line for a board chosen without evidence (None otherwise)."""
        if not self.guessed:
            return None
        return (f"{self.path}: an nRF52832 image that names no board: running it on "
                f"{BOARD_NAMES[self.board]} (--board nrf52832 for the bare chip, "
                f"--board nrf52dk for the nRF52 DK)")

    def error_message(self) -> str:
        return f"{self.path}: cannot tell which board it is for: {self.problem}; {CHOICES}"

    def require_board(self) -> str:
        if self.board is None:
            raise BoardDetectionError(self)
        return self.board


def detect(firmware: Union[str, FirmwareImage], base: Optional[int] = None) -> Detection:
    """The chip and board ``firmware`` (a path or a loaded image) was built
    for, and the evidence.  Raises FirmwareError only for a file that cannot
    be loaded; an undecided image has ``board`` None and a ``problem``."""
    img = firmware if isinstance(firmware, FirmwareImage) else load_firmware(firmware,
                                                                             base=base)
    d = Detection(img.path, img)
    chip, board = d.chip_evidence, d.board_evidence
    flash = _flash_data(img)
    text = b"\0".join(data for _a, data in flash).lower()
    elf = _elf_facts(img.path) if img.format == "elf" else None
    if elf is not None:
        chip += _attribute_evidence(elf)
    chip += _memory_evidence(img, flash, elf)
    chip += _symbol_evidence(img)
    if elf is not None:
        chip_src, board_src = _debug_source_evidence(elf)
        chip += chip_src
        board += board_src
    chip += _vector_evidence(img, flash)
    chip += _part_number_evidence(text)
    if not any(e.strength == DECISIVE for e in chip):
        chip += _code_evidence(img, flash)
    chip += _stack_pointer_evidence(img)
    board += _board_word_evidence(img, text)
    board += _pinctrl_evidence(flash)
    board += _layout_evidence(img)
    _decide(d)
    return d


def detect_board(firmware: Union[str, FirmwareImage], base: Optional[int] = None) -> str:
    """The board to run ``firmware`` on; BoardDetectionError if the image
    does not tell (FirmwareError if it cannot be loaded)."""
    return detect(firmware, base=base).require_board()


# ----------------------------------------------------------------------
# the decision
# ----------------------------------------------------------------------
def _decide(d: Detection) -> None:
    for level in (DECISIVE, SUPPORTING):
        at = [e for e in d.chip_evidence if e.strength == level]
        says = _unique(e.points_to for e in at)
        if len(says) > 1:
            sides = [next(e for e in at if e.points_to == c) for c in says]
            d.problem = ("its evidence conflicts: " + "; ".join(
                f"{e.what} says {CHIP_NAMES[e.points_to]}" for e in sides))
            return
        if says == [OTHER]:
            e = at[0]
            d.problem = f"{e.what}: not an nRF51822 (Cortex-M0) or nRF52832 (Cortex-M4F)"
            return
        if says:
            d.chip = says[0]
            break
    else:
        weak = [e for e in d.chip_evidence if e.strength == WEAK]
        d.problem = "it holds no evidence of its chip (no build attributes, symbols or code " \
                    "that tell an nRF51822 from an nRF52832" + \
                    (f"; only weak hints: {', '.join(e.what for e in weak)}" if weak else "") + \
                    ")" + _misplaced(d.image)
        return
    fits = [e for e in d.board_evidence if BOARD_CHIP.get(e.points_to) == d.chip]
    for level in (DECISIVE, SUPPORTING, WEAK):
        boards = _unique(e.points_to for e in fits if e.strength == level)
        if len(boards) > 1:
            d.problem = "it names more than one board: " + "; ".join(
                f"{next(e.what for e in fits if e.points_to == b)} says {BOARD_NAMES[b]}"
                for b in boards)
            return
        if boards:
            d.board = boards[0]
            return
    d.board = DEFAULT_BOARD[d.chip]
    d.guessed = d.chip == NRF52


def _misplaced(img: Optional[FirmwareImage]) -> str:
    """A hint for an image whose reset vector points outside its own data
    (a raw binary linked for another address)."""
    if img is None or img.vector_table is None:
        return ""
    reset = img.word_at(img.vector_table + 4)
    if reset is None or img.word_at(reset & ~1) is not None:
        return ""
    spans = ", ".join(f"{a:#x}-{a + len(d) - 1:#x}" for a, d in _flash_data(img))
    return (f"; its reset vector {reset:#x} points outside the image (loaded at {spans}): "
            "linked for another address")


def _unique(items) -> list:
    return list(dict.fromkeys(items))


# ----------------------------------------------------------------------
# chip evidence
# ----------------------------------------------------------------------
@dataclass
class _ElfFacts:
    e_flags: int
    attributes: dict          # tag name -> value
    sections: list            # (name, address, size) of allocated sections
    debug: bytes              # .debug_line and .debug_line_str


def _elf_facts(path: str) -> Optional[_ElfFacts]:
    import io
    from elftools.elf.elffile import ELFFile
    from elftools.elf.sections import ARMAttributesSection
    try:
        with open(path, "rb") as f:
            elf = ELFFile(io.BytesIO(f.read()))
        attributes = {}
        sections = []
        debug = []
        for sec in elf.iter_sections():
            if isinstance(sec, ARMAttributesSection):
                for sub in sec.iter_subsections():
                    for subsub in sub.iter_subsubsections():
                        for a in subsub.iter_attributes():
                            attributes.setdefault(a.tag, a.value)
            elif sec["sh_flags"] & 2 and sec["sh_size"]:             # SHF_ALLOC
                sections.append((sec.name, sec["sh_addr"], sec["sh_size"]))
            elif sec.name in (".debug_line", ".debug_line_str"):
                debug.append(sec.data())
        return _ElfFacts(elf["e_flags"], attributes, sections, b"\0".join(debug))
    except Exception as e:            # a damaged ELF: judged by its loaded image alone
        log.info("%s: ELF details unreadable (%s: %s)", path, type(e).__name__, e)
        return None


def _attribute_evidence(elf: _ElfFacts) -> list:
    out = []
    arch = elf.attributes.get("TAG_CPU_ARCH")
    if arch is not None:
        name = CPU_ARCH.get(arch, f"architecture {arch}")
        if arch in (11, 12):
            out.append(Evidence(NRF51, DECISIVE, f"build attributes: Tag_CPU_arch {name} "
                                                 "(Cortex-M0)"))
        elif arch == 13 or (arch == 10 and elf.attributes.get("TAG_CPU_ARCH_PROFILE") == 77):
            out.append(Evidence(NRF52, DECISIVE, f"build attributes: Tag_CPU_arch {name} "
                                                 "(Cortex-M4)"))
        else:
            out.append(Evidence(OTHER, DECISIVE, f"build attributes: Tag_CPU_arch {name}"))
    fp = elf.attributes.get("TAG_FP_ARCH")
    if fp:
        out.append(Evidence(NRF52, DECISIVE, f"build attributes: Tag_FP_arch "
                                             f"{FP_ARCH.get(fp, fp)} (an FPU)"))
    if elf.e_flags & EF_ARM_ABI_FLOAT_HARD:
        out.append(Evidence(NRF52, DECISIVE, f"hard-float ABI (e_flags {elf.e_flags:#x})"))
    return out


def _flash_data(img: FirmwareImage) -> list:
    return sorted((a, d) for a, d in img.segments if a < 0x10000000)


def _memory_evidence(img: FirmwareImage, flash: list, elf: Optional[_ElfFacts]) -> list:
    out = []
    places = [(a + len(d), f"data loaded at {a:#x}-{a + len(d) - 1:#x}") for a, d in flash]
    ram = []
    if elf is not None:
        for name, addr, size in elf.sections:
            end = addr + size
            if addr < 0x10000000:
                places.append((end, f"section {name} at {addr:#x}-{end - 1:#x}"))
            elif RAM_BASE <= addr < RAM_END_NRF52:
                ram.append((end, f"section {name} at {addr:#x}-{end - 1:#x}"))
    for name, (value, _size, _kind) in img.symbols.by_name.items():
        if RAM_BASE < value <= RAM_END_NRF52:
            ram.append((value, f"symbol {name} = {value:#x}"))
    if places:
        end, what = max(places)
        if end > FLASH_END_NRF51:
            out.append(Evidence(NRF52, DECISIVE, f"{what}: beyond the nRF51's 256 KiB of "
                                                 "flash"))
    if ram:
        end, what = max(ram)
        if end > RAM_END_NRF51:
            out.append(Evidence(NRF52, DECISIVE, f"{what}: beyond the nRF51's 32 KiB of RAM"))
        elif end > RAM_END_MICROBIT:
            out.append(Evidence(NRF52, SUPPORTING, f"{what}: beyond the micro:bit's 16 KiB "
                                                   "of RAM"))
    return out


def _symbol_evidence(img: FirmwareImage) -> list:
    """Symbols naming one family decide; an image whose symbols name both
    (a library with code for either) only leans to the one named more."""
    named = {NRF51: [], NRF52: []}
    for name in img.symbols.by_name:
        m = FAMILY_SYMBOL.search(name)
        if m:
            named[NRF51 if m.group(1) == "1" else NRF52].append(name)
    both = all(named.values())
    if both and len(named[NRF51]) == len(named[NRF52]):
        return []
    chips = [max(named, key=lambda c: len(named[c]))] if both else [c for c in named
                                                                    if named[c]]
    return [Evidence(c, SUPPORTING if both else DECISIVE,
                     f"{len(named[c])} symbols naming the {CHIP_NAMES[c][:5]} family "
                     f"({', '.join(sorted(named[c])[:3])}{', ...' if len(named[c]) > 3 else ''})"
                     + (f", {len(named[NRF51 if c == NRF52 else NRF52])} the other" if both
                        else "")) for c in chips]


def _debug_source_evidence(elf: _ElfFacts) -> tuple:
    chip, board = {}, {}
    for m in SOURCE_NAME.finditer(elf.debug):
        name = m.group(1)
        fam = FAMILY_SOURCE.match(name)
        if fam:
            chip.setdefault(NRF51 if fam.group(1) == b"1" else NRF52, name.decode())
        low = name.lower()
        for word, b in SOURCE_BOARD_WORDS:
            if word in low:
                board.setdefault(b, (SUPPORTING, name.decode()))
    for m in ZEPHYR_BOARD_DIR.finditer(elf.debug):
        low = m.group(1).lower()
        for word, b in BOARD_WORDS:
            if word in low:
                board[b] = (DECISIVE, f"boards/arm/{m.group(1).decode()}")
    return ([Evidence(c, DECISIVE, f"debug info: compiled from {n}") for c, n in chip.items()],
            [Evidence(b, level, f"debug info: compiled from {n}")
             for b, (level, n) in board.items()])


def _vector_table(img: FirmwareImage, flash: list) -> tuple:
    """(entries, last, handlers): the vector table's length counted as the
    entries that are 0 or an odd address in the image's flash, up to the
    first that is neither (the code after it); the index of the last
    non-zero entry; the handler addresses."""
    vt = img.vector_table
    lo, hi = flash[0][0], max(a + len(d) for a, d in flash)
    last, n, handlers = 1, 1, []
    while n < 16 + 64:
        w = img.word_at(vt + 4 * n)
        if w is None or not (w == 0 or (w & 1 and lo <= w & ~1 < hi)) or (n == 1 and not w):
            break
        if w:
            last = n
            handlers.append(w & ~1)
        n += 1
    return n, last, list(dict.fromkeys(handlers))


def _vector_evidence(img: FirmwareImage, flash: list) -> list:
    if img.vector_table is None or not flash:
        return []
    vt = img.vector_table
    n, last, _handlers = _vector_table(img, flash)
    table = 16 + IRQS[NRF51]
    if n >= 16 + IRQS[NRF52] and last >= table:
        return [Evidence(NRF52, SUPPORTING, f"vector table at {vt:#x} has a handler for "
                                            f"IRQ {last - 16} (the nRF51 has 32)")]
    if table <= n < 16 + IRQS[NRF52] and last < table:
        return [Evidence(NRF51, SUPPORTING, f"vector table at {vt:#x} ends after {table} "
                                            "entries (16 + the nRF51's 32 interrupts)")]
    if 16 + 16 <= n < table:          # Zephyr's nRF51 tables stop at its last IRQ (26)
        return [Evidence(NRF51, SUPPORTING, f"vector table at {vt:#x} ends after {n} "
                                            f"entries (16 + {n - 16} interrupts; an "
                                            "nRF52832's has 16 + 39)")]
    return []


def _part_number_evidence(text: bytes) -> list:
    return [Evidence(chip, SUPPORTING, f"the text {part.decode()!r} in the image")
            for part, chip in PART_NUMBERS if part in text]


def _stack_pointer_evidence(img: FirmwareImage) -> list:
    sp = img.word_at(img.vector_table) if img.vector_table is not None else None
    if sp is None or not RAM_BASE < sp <= RAM_END_NRF52:
        return []
    if sp <= RAM_END_MICROBIT:
        return [Evidence(NRF51, WEAK, f"initial SP {sp:#x} within the micro:bit's 16 KiB")]
    return [Evidence(NRF52, WEAK, f"initial SP {sp:#x} above the micro:bit's 16 KiB")]


def _code_evidence(img: FirmwareImage, flash: list) -> list:
    """Decode the code reached from the vector table (calls and branches
    followed, each path ended by a return or an unconditional branch):
    Thumb-2 and FPU instructions are code for a Cortex-M4."""
    if img.vector_table is None or not flash:
        return []
    try:
        from capstone import CS_ARCH_ARM, CS_MODE_MCLASS, CS_MODE_THUMB, Cs
    except ImportError:                                   # pragma: no cover
        return []
    md = Cs(CS_ARCH_ARM, CS_MODE_THUMB | CS_MODE_MCLASS)

    def read(addr: int) -> bytes:
        for a, d in flash:
            if a <= addr < a + len(d):
                return d[addr - a:addr - a + 256]
        return b""
    todo = _vector_table(img, flash)[2]
    seen: set = set()
    decoded = 0
    wide = []
    while todo and decoded < CODE_BUDGET:
        addr = todo.pop(0)
        while addr is not None and decoded < CODE_BUDGET:
            code, nxt = read(addr), None
            for ins in md.disasm(code, addr):
                if ins.address in seen:
                    break
                seen.add(ins.address)
                decoded += 1
                mnem = ins.mnemonic.split(".")[0]
                if (ins.size == 4 and mnem not in V6M_WIDE) or mnem in ("cbz", "cbnz") \
                        or (mnem.startswith("it") and len(mnem) <= 4):
                    wide.append(ins)
                if mnem.startswith("b") and ins.op_str.startswith("#"):   # b<cc>, bl
                    try:
                        todo.append(int(ins.op_str[1:], 16))
                    except ValueError:
                        pass
                if ins.mnemonic in ("b", "b.w", "bx", "udf") or (
                        mnem == "pop" and "pc" in ins.op_str) or decoded >= CODE_BUDGET:
                    break                                 # the path ends
                nxt = ins.address + ins.size
            else:
                addr = nxt                                # the chunk ran out: read on
                continue
            addr = None
    if decoded < CODE_MIN:
        return []
    share = len(wide) / decoded
    if len(wide) >= 4 and share >= THUMB2_DECISIVE:
        fpu = [i for i in wide if i.mnemonic.startswith("v")]
        ex = (fpu or wide)[0]
        kind = "Thumb-2 or FPU" if fpu else "Thumb-2"
        return [Evidence(NRF52, DECISIVE, f"code: {len(wide)} of {decoded} instructions "
                                          f"decoded from the vectors are {kind} (e.g. "
                                          f"{ex.mnemonic} {ex.op_str[:24]} at {ex.address:#x}),"
                                          " which a Cortex-M0 lacks")]
    if share <= THUMB2_NONE:
        return [Evidence(NRF51, SUPPORTING, f"code: {decoded} instructions decoded from the "
                                            f"vectors, {len(wide)} of them Thumb-2 (code for "
                                            "a Cortex-M0)")]
    return []


# ----------------------------------------------------------------------
# board evidence
# ----------------------------------------------------------------------
def _board_word_evidence(img: FirmwareImage, text: bytes) -> list:
    names = "\0".join(img.symbols.by_name).lower()
    out = {}
    for word, board in BOARD_WORDS:
        if board in out:
            continue
        i = text.find(word)
        if i >= 0:
            out[board] = f"the text {_context(text, i, len(word))!r} in the image"
        elif word.decode() in names:
            out[board] = "symbol " + next(n for n in img.symbols.by_name
                                          if word.decode() in n.lower())
    return [Evidence(b, DECISIVE, what) for b, what in out.items()]


def _context(text: bytes, i: int, n: int) -> str:
    """The printable run around text[i:i+n] (at most 40 characters)."""
    start, end = i, i + n
    while start > 0 and i - start < 20 and 32 <= text[start - 1] < 127:
        start -= 1
    while end < len(text) and end - i < 30 and 32 <= text[end] < 127:
        end += 1
    return text[start:end].decode("ascii", "replace")


def _pinctrl_evidence(flash: list) -> list:
    """A board's pin control array (its default state; the sleep state is
    only built with device power management) at a word-aligned address."""
    out = []
    for board, groups in ZEPHYR_PINCTRL.items():
        for what, pins in groups:
            words = b"".join(struct.pack("<I", _psel(f, p)) for f, p in pins)
            if any(_find_aligned(d, words, a) for a, d in flash):
                out.append(Evidence(board, DECISIVE, f"Zephyr pin control table: {what}"))
                break
    return out


def _find_aligned(data: bytes, needle: bytes, base: int) -> bool:
    i = data.find(needle)
    while i >= 0:
        if (base + i) % 4 == 0:
            return True
        i = data.find(needle, i + 1)
    return False


def _layout_evidence(img: FirmwareImage) -> list:
    if img.mcuboot is not None or img.vector_table in MCUBOOT_VECTORS:
        return [Evidence("pinetime", WEAK, "an MCUBoot application image, as InfiniTime "
                                                 "ships for the PineTime")]
    if img.vector_table == APP_BASE_S132:
        return [Evidence("pinetime", WEAK, "an application at 0x26000 for the S132 "
                                                 "SoftDevice, as wasp-os builds for the "
                                                 "PineTime")]
    return []
