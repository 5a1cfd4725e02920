"""RADIO (0x40001000, IRQ 1), nRF52832 PS v1.4 section 23, at the packet level.

State machine (STATE +0x550: Disabled 0, RxRu 1, RxIdle 2, Rx 3, RxDisable 4,
TxRu 9, TxIdle 10, Tx 11, TxDisable 12) with the PS's timing: TXEN/RXEN ->
READY after the ramp-up (140 us, 40 us with MODECNF0.RU=Fast); a TXEN/RXEN
from the DISABLED_TXEN shortcut right after a packet keeps TIFS between that
packet's end and the next packet's start (RX ramps up at once, so it
listens before a TIFS answer can start); DISABLE -> DISABLED after
6 us from TX, at once from RX and from Disabled (DISABLED fires again);
STOP back to the idle state.  Shortcuts as
in SHORTS (+0x200).

Packets.  START in TxIdle reads the packet from RAM at PACKETPTR (EasyDMA)
laid out by PCNF0 (S0 byte, LENGTH field of LFLEN bits, S1 of S1LEN bits or
a byte kept in RAM with S1INCL) and PCNF1 (MAXLEN, BALEN, WHITEEN): on the
air it takes preamble (8 or 16 bits, PCNF0.PLEN), address (BALEN + 1
bytes), S0, LENGTH, S1 (its bits, not the RAM byte), payload and CRC
(CRCCNF.LEN bytes, CRCPOLY, CRCINIT; SKIPADDR), at 1 Mbit (8 us a byte)
or 2 Mbit (MODE Ble_2Mbit/Nrf_2Mbit).  Events, with the chain delays the
nRF52832 shows (the figures NimBLE's PHY compensates for): the first bit
4 us (1 Mbit; 3 us at 2 Mbit) after START, ADDRESS at the end of the
address, PAYLOAD at the end of the payload, END 4 us (3 us) before the
last bit.  The packet goes to the air (emu/air.py) at its end.

RX: START in RxIdle listens on FREQUENCY for the logical addresses enabled
in RXADDRESSES (BASE0/BASE1 + PREFIX0/PREFIX1).  A packet on the air that
starts after the radio began listening is received: ADDRESS 6 us (2 us)
after its address, the whole packet written at that moment to PACKETPTR as
START found it
(LENGTH clipped to MAXLEN), RXMATCH, BCMATCH after BCC bits counted from
ADDRESS (BCSTART), DEVMATCH/DEVMISS from DACNF/DAB/DAP against the first
48 payload bits, PAYLOAD, then END 6 us (2 us) after the last bit with
CRCSTATUS/RXCRC and CRCOK or CRCERROR.  RSSISTART -> RSSIEND after 0.25 us,
RSSISAMPLE = the air's RSSI.  Whitening is compared by IV: a packet whose
sender's whitening (WHITEEN, DATAWHITEIV) differs from the receiver's
fails its CRC.

Not modelled: the bits themselves (no whitening sequence is applied, no
bit errors), Long Range (coded) modes and their CI/TERM fields, the
STATLEN/ENDIAN fields (little endian, LENGTH-sized payloads), TXPOWER and
the carrier (no RSSI dependence on distance), the EVENTS_FRAMESTART/EDEND
families of later chips; logged once where firmware uses them.
"""
from __future__ import annotations

import bisect

from emu.air import US, Packet, crc24
from emu.peripherals.base import RO, NrfPeripheral, Reg
from emu.soc.ops import R_ATTR, Op

T_TXEN, T_RXEN, T_START, T_STOP, T_DISABLE = 0x000, 0x004, 0x008, 0x00C, 0x010
T_RSSISTART, T_RSSISTOP, T_BCSTART, T_BCSTOP = 0x014, 0x018, 0x01C, 0x020
E_READY, E_ADDRESS, E_PAYLOAD, E_END, E_DISABLED = 0x100, 0x104, 0x108, 0x10C, 0x110
E_DEVMATCH, E_DEVMISS, E_RSSIEND, E_BCMATCH, E_CRCOK, E_CRCERROR = (0x114, 0x118, 0x11C,
                                                                   0x128, 0x130, 0x134)
CRCSTATUS, RXMATCH, RXCRC, DAI = 0x400, 0x408, 0x40C, 0x410
PACKETPTR, FREQUENCY, MODE, PCNF0, PCNF1 = 0x504, 0x508, 0x510, 0x514, 0x518
BASE0, BASE1, PREFIX0, PREFIX1, TXADDRESS, RXADDRESSES = (0x51C, 0x520, 0x524, 0x528,
                                                         0x52C, 0x530)
CRCCNF, CRCPOLY, CRCINIT, TIFS, RSSISAMPLE, STATE, DATAWHITEIV = (0x534, 0x538, 0x53C, 0x544,
                                                                 0x548, 0x550, 0x554)
BCC, DACNF, MODECNF0 = 0x560, 0x640, 0x650

DISABLED, RXRU, RXIDLE, RX, RXDISABLE, TXRU, TXIDLE, TX, TXDISABLE = 0, 1, 2, 3, 4, 9, 10, 11, 12
RX_STATES = frozenset((RXRU, RXIDLE, RX, RXDISABLE))    # the receiver is on


class Radio(NrfPeripheral):
    # what a snapshot saves (SNAPSHOT) and what the wiring rebuilds (emu/snapshot.py)
    SNAPSHOT = ("_address_at", "_ev", "_last_end", "_listen_since", "_rssi", "_rx_ptr", "_seq",
                "_short_enable", "_state")
    STRUCTURE = ("_due", "_inbound", "_rx", "_tx", "air")
    NAME = "RADIO"
    HAS_INTEN = False   # only INTENSET/INTENCLR (PS 23.14)
    TASKS = {T_TXEN: "TXEN", T_RXEN: "RXEN", T_START: "START", T_STOP: "STOP",
             T_DISABLE: "DISABLE", T_RSSISTART: "RSSISTART", T_RSSISTOP: "RSSISTOP",
             T_BCSTART: "BCSTART", T_BCSTOP: "BCSTOP"}
    EVENTS = {E_READY: "READY", E_ADDRESS: "ADDRESS", E_PAYLOAD: "PAYLOAD", E_END: "END",
              E_DISABLED: "DISABLED", E_DEVMATCH: "DEVMATCH", E_DEVMISS: "DEVMISS",
              E_RSSIEND: "RSSIEND", E_BCMATCH: "BCMATCH", E_CRCOK: "CRCOK",
              E_CRCERROR: "CRCERROR"}
    SHORTS = {0: (E_READY, T_START), 1: (E_END, T_DISABLE), 2: (E_DISABLED, T_TXEN),
              3: (E_DISABLED, T_RXEN), 4: (E_ADDRESS, T_RSSISTART), 5: (E_END, T_START),
              6: (E_ADDRESS, T_BCSTART), 8: (E_DISABLED, T_RSSISTOP)}
    REGISTERS = [
        Reg(CRCSTATUS, "CRCSTATUS", 0, RO),
        Reg(RXMATCH, "RXMATCH", 0, RO),
        Reg(RXCRC, "RXCRC", 0, RO),
        Reg(DAI, "DAI", 0, RO),
        Reg(PACKETPTR, "PACKETPTR"),
        Reg(FREQUENCY, "FREQUENCY", 0x2, mask=0x17F),
        Reg(0x50C, "TXPOWER", mask=0xFF),
        Reg(MODE, "MODE", mask=0xF),
        Reg(PCNF0, "PCNF0"),
        Reg(PCNF1, "PCNF1"),
        Reg(BASE0, "BASE0"),
        Reg(BASE1, "BASE1"),
        Reg(PREFIX0, "PREFIX0"),
        Reg(PREFIX1, "PREFIX1"),
        Reg(TXADDRESS, "TXADDRESS", mask=0x7),
        Reg(RXADDRESSES, "RXADDRESSES", mask=0xFF),
        Reg(CRCCNF, "CRCCNF", mask=0x103),
        Reg(CRCPOLY, "CRCPOLY", mask=0xFFFFFF),
        Reg(CRCINIT, "CRCINIT", mask=0xFFFFFF),
        Reg(TIFS, "TIFS", mask=0xFF),
        Reg(RSSISAMPLE, "RSSISAMPLE", 0, RO, read="_rd_rssisample", timed=False),
        Reg(STATE, "STATE", 0, RO, read="_rd_state", timed=False),
        Reg(DATAWHITEIV, "DATAWHITEIV", 0x40, mask=0x7F, write="_wr_whiteiv"),
        Reg(BCC, "BCC"),
        Reg(0x600, "DAB", count=8),
        Reg(0x620, "DAP", count=8, mask=0xFFFF),
        Reg(DACNF, "DACNF", mask=0xFFFF),
        Reg(MODECNF0, "MODECNF0", 0x200, mask=0x301),
        Reg(0xFFC, "POWER", 1, mask=1),
    ]

    def __init__(self, soc, base, name=None, irq=None):
        from emu.air import Air
        clock = soc.clock
        self._ev = clock.event(f"{name or 'radio'}.timing", self._run_due)
        air = getattr(soc, "air", None)
        if air is None:
            air = Air(clock)
        self.air = air
        super().__init__(soc, base, name, irq)
        air.attach_radio(self)

    _state = DISABLED

    @property
    def state(self) -> int:
        """STATE (0 Disabled ... 12 TxDisable); every change reaches
        ``power_watch`` (the energy model) at the tick it happens."""
        return self._state

    @state.setter
    def state(self, value: int) -> None:
        if value != self._state:
            was = self._state in RX_STATES
            self._state = value
            if (value in RX_STATES) != was:
                # the air learns when the receiver starts and stops listening
                # (emu/airspace.py lets a chip that is not listening run ahead)
                self.air.listening(not was, self.clock.now)
            if self.power_watch is not None:
                self.power_watch(self)

    def reset(self) -> None:
        super().reset()
        self._ev.cancel()
        self.state = DISABLED
        self._due: list = []       # [(when, seq, action, arg)]
        self._seq = 0
        self._tx = None            # the packet being sent (a Packet)
        self._rx = None            # the packet being received
        self._listen_since = None  # tick the radio started listening (Rx)
        self._last_end = None      # (tick, was_tx) of the last packet's last bit
        self._short_enable = False # TXEN/RXEN came from the DISABLED shortcut
        self._inbound: list = []   # host packets on the air, not yet heard
        self._address_at = None    # tick of the last ADDRESS (the bit counter)
        self._rx_ptr = 0           # PACKETPTR as START found it (RX)
        self._rssi = 0

    # -- registers ---------------------------------------------------------
    def _wr_whiteiv(self, value: int, old: int) -> None:
        self.values[DATAWHITEIV] |= 0x40      # bit 6 is hard-wired to 1 (PS 23.14.41)

    def _rd_state(self, _off) -> int:
        return self.state

    def read_op(self, offset: int):
        # STATE is the ``state`` property's ``_state``: the bus reads it in C
        # (NimBLE reads it ~260 times an emulated second while advertising)
        if (offset == STATE and self._own("read", NrfPeripheral)
                and type(self)._rd_state is Radio._rd_state
                and type(self).state is Radio.state):
            return Op(R_ATTR, self, ("_state",), timed=False)
        return super().read_op(offset)

    def _rd_rssisample(self, _off) -> int:
        return self._rssi

    # -- timing ------------------------------------------------------------
    def _at(self, when: int, action: str, arg=None) -> None:
        self._seq += 1
        # in (when, seq) order: seq is unique, so the tuples never compare further
        bisect.insort(self._due, (when, self._seq, action, arg))
        self._ev.schedule_at(self._due[0][0])

    def _cancel(self, *actions) -> None:
        self._due = [d for d in self._due if d[2] not in actions]
        if self._due:
            self._ev.schedule_at(self._due[0][0])
        else:
            self._ev.cancel()

    def _run_due(self) -> None:
        now = self.clock.now
        while self._due and self._due[0][0] <= now:
            _when, _seq, action, arg = self._due.pop(0)
            getattr(self, "_do_" + action)(arg)
        if self._due:
            self._ev.schedule_at(self._due[0][0])

    def _two_mbit(self) -> bool:
        return self.values[MODE] in (1, 4)

    def _byte_ticks(self) -> int:
        return (4 if self._two_mbit() else 8) * US

    def _chain(self, one: int, two: int) -> int:
        return (two if self._two_mbit() else one) * US

    def _freq(self) -> int:
        f = self.values[FREQUENCY]
        return (2360 if (f >> 8) & 1 else 2400) + (f & 0x7F)

    def _fast(self) -> bool:
        return bool(self.values.get(MODECNF0, 0) & 1)

    # -- tasks -------------------------------------------------------------
    def _enable(self, tx: bool) -> None:
        if self.state not in (DISABLED,):
            self.log_once(("en", self.state), "%s in state %d ignored", "TXEN" if tx else "RXEN",
                          self.state)
            return
        now = self.clock.now
        ready = now + (40 if self._fast() else 140) * US
        if tx and self._short_enable and self._last_end is not None:
            # the shortcut after a packet: the next packet starts TIFS after its end
            ready = max(ready, self._last_end[0] + self.values[TIFS] * US - self._chain(4, 3))
        self._short_enable = False
        self.state = TXRU if tx else RXRU
        self._at(ready, "ready")

    def task_TXEN(self) -> None:
        self._enable(True)

    def task_RXEN(self) -> None:
        self._enable(False)

    def _do_ready(self, _arg) -> None:
        self.state = TXIDLE if self.state == TXRU else RXIDLE
        self.fire(E_READY)

    def task_START(self) -> None:
        if self.state == TXIDLE:
            self._start_tx()
        elif self.state == RXIDLE:
            self.state = RX
            self._listen_since = self.clock.now
            self._rx_ptr = self.values[PACKETPTR]      # EasyDMA takes the pointer at START
            self._schedule_inbound()
        else:
            self.log_once(("start", self.state), "START in state %d ignored", self.state)

    def task_STOP(self) -> None:
        if self.state == TX:
            self._cancel("tx_address", "tx_payload", "tx_end", "tx_air", "bcmatch")
            self._abort_tx()
            self.state = TXIDLE
        elif self.state == RX:
            self._cancel("rx_address", "rx_payload", "rx_end", "bcmatch", "devmatch")
            self._rx = None
            self._listen_since = None
            self.state = RXIDLE

    def task_DISABLE(self) -> None:
        if self.state == DISABLED:
            # already disabled: DISABLED again at once, as Nordic's own models
            # of the nRF52 RADIO do; drivers clear EVENTS_DISABLED, trigger
            # DISABLE and wait for the event whatever the state (nrf_esb.c's
            # disable, the S132 SoftDevice between radio events)
            self._do_disabled(None)
            return
        sending = self.state == TX      # after END the packet's last bits still go out
        self._cancel("ready", "tx_address", "tx_payload", "tx_end", "rx_address",
                     "rx_payload", "rx_end", "bcmatch", "devmatch", "disabled",
                     *(("tx_air",) if sending else ()))
        if sending:
            self._abort_tx()
        self._rx = None
        self._listen_since = None
        if self.state in (TXRU, TXIDLE, TX, TXDISABLE):
            self.state = TXDISABLE
            self._at(self.clock.now + 6 * US, "disabled")
        else:
            self.state = RXDISABLE
            self._do_disabled(None)

    def _do_disabled(self, _arg) -> None:
        self.state = DISABLED
        # a TXEN/RXEN this event's shortcut triggers keeps TIFS
        self._short_enable = bool(self.shorts & 0b1100)
        self.fire(E_DISABLED)
        self._short_enable = False

    def _abort_tx(self) -> None:
        """STOP or DISABLE cut the packet being sent: its last bits never go out."""
        p, self._tx = self._tx, None
        if p is not None:
            self.air.transmit_abort(p, self.clock.now)

    def txpower_dbm(self) -> int:
        """TXPOWER (+0x50C) in dBm: the register holds the power as a signed
        byte (PS 23.14.11: Pos4dBm 0x04 ... Neg40dBm 0xD8)."""
        v = self.values[0x50C] & 0xFF
        return v - 256 if v & 0x80 else v

    def earliest_tx(self, busy_from: int) -> int:
        """The earliest tick at which a packet this radio has not started yet
        could have its first bit on the air, if nothing reaches the chip from
        outside and nothing in it acts before ``busy_from`` (the CPU's
        current tick when it runs, else its next scheduled event): START in
        TxIdle (or after END, or READY in TxRu) puts the first bit 3 us
        (2 Mbit) later; from any other state a TXEN and the fast ramp-up
        (40 us) come first.  emu/timeline.py bounds the other machines by it."""
        if self._state in (TXIDLE, TX, TXRU):
            return busy_from + 3 * US
        return busy_from + 43 * US

    def task_RSSISTART(self) -> None:
        self._rssi = min(127, max(0, -int(round(self.air.rssi_now(self)))))
        self._at(self.clock.now + US // 4, "rssiend")

    def _do_rssiend(self, _arg) -> None:
        self.fire(E_RSSIEND)

    def task_RSSISTOP(self) -> None:
        self._cancel("rssiend")

    def task_BCSTART(self) -> None:
        if self._address_at is None or self.state not in (TX, RX):
            return
        bits = self.values[BCC]
        self._at(self._address_at + bits * self._byte_ticks() // 8, "bcmatch")

    def task_BCSTOP(self) -> None:
        self._cancel("bcmatch")

    def _do_bcmatch(self, _arg) -> None:
        self.fire(E_BCMATCH)

    # -- packet layout -----------------------------------------------------
    def _layout(self):
        """(S0 bytes, LENGTH bits, LENGTH bytes, S1 bits, S1 RAM bytes,
        preamble bytes, address bytes, CRC bytes, MAXLEN)."""
        p0, p1 = self.values[PCNF0], self.values[PCNF1]
        lflen = p0 & 0xF
        s0 = (p0 >> 8) & 1
        s1len = (p0 >> 16) & 0xF
        s1incl = (p0 >> 20) & 1
        s1ram = (s1len + 7) // 8 if s1len else (1 if s1incl else 0)
        plen = 2 if ((p0 >> 24) & 3) == 1 else 1
        balen = (p1 >> 16) & 7
        crclen = self.values[CRCCNF] & 3
        return s0, lflen, (lflen + 7) // 8, s1len, s1ram, plen, balen + 1, crclen, p1 & 0xFF

    def _address(self, logical: int) -> int:
        """The access address of logical address ``logical`` (prefix byte on
        top, base below; BALEN bytes of the base), as BLE writes it."""
        _s0, _lf, _lb, _s1, _s1r, _pl, alen, _c, _m = self._layout()
        base = self.values[BASE0 if logical == 0 else BASE1]
        prefix = (self.values[PREFIX0 if logical < 4 else PREFIX1] >> (8 * (logical % 4))) & 0xFF
        nbase = alen - 1
        base_bits = (base >> (32 - 8 * nbase)) if nbase else 0
        return (prefix << (8 * nbase)) | base_bits

    def _crc(self, addr: int, pdu: bytes) -> int:
        cc = self.values[CRCCNF]
        n = cc & 3
        if not n:
            return 0
        data = pdu
        if not (cc >> 8) & 1:       # SKIPADDR = 0: the address is in the CRC
            alen = self._layout()[6]
            data = addr.to_bytes(alen, "little") + pdu
        return crc24(data, self.values[CRCINIT], self.values[CRCPOLY], 8 * n)

    def _whitening(self):
        return (self.values[DATAWHITEIV] & 0x7F) if (self.values[PCNF1] >> 25) & 1 else None

    # -- TX ----------------------------------------------------------------
    def _start_tx(self) -> None:
        s0, lflen, lbytes, s1len, s1ram, plen, alen, crclen, maxlen = self._layout()
        ptr = self.values[PACKETPTR]
        cpu = self.soc.cpu
        try:
            head = cpu.read_mem(ptr, s0 + lbytes + s1ram)
            length = int.from_bytes(head[s0:s0 + lbytes], "little") & ((1 << lflen) - 1)
            length = min(length, maxlen)
            payload = cpu.read_mem(ptr + len(head), length) if length else b""
        except Exception:    # an unmapped PACKETPTR: nothing sensible goes out
            self.log_once("ptr", "PACKETPTR %#x is not RAM: packet not sent", ptr)
            head, payload = bytes(s0 + lbytes + s1ram), b""
        s1_air = head[s0 + lbytes:s0 + lbytes + (s1len + 7) // 8] if s1len else b""
        pdu = head[:s0 + lbytes] + s1_air + payload
        addr = self._address(self.values[TXADDRESS])
        bt = self._byte_ticks()
        start = self.clock.now + self._chain(4, 3)
        t_addr = start + (plen + alen) * bt
        t_payload = t_addr + len(pdu) * bt
        end = t_payload + crclen * bt
        freq = self._freq()
        self._tx = Packet(start, end, freq, self.values[MODE], addr, bytes(pdu),
                          self._crc(addr, pdu), self._whitening(), self.air.name)
        self.state = TX
        self.air.transmit_start(self._tx, self.txpower_dbm())
        self._at(t_addr, "tx_address")
        self._at(t_payload, "tx_payload")
        self._at(end - self._chain(4, 3), "tx_end")
        self._at(end, "tx_air")

    def _do_tx_address(self, _arg) -> None:
        self._address_at = self.clock.now
        self.fire(E_ADDRESS)

    def _do_tx_payload(self, _arg) -> None:
        self.fire(E_PAYLOAD)

    def _do_tx_end(self, _arg) -> None:
        self.state = TXIDLE
        self._last_end = (self._tx.end, True) if self._tx is not None else None
        self.fire(E_END)

    def _do_tx_air(self, _arg) -> None:
        p, self._tx = self._tx, None
        if p is not None:
            self.air.from_watch(p)

    # -- RX ----------------------------------------------------------------
    def air_packet(self, p: Packet) -> None:
        """A host device put ``p`` on the air (called by emu.air.Air.send)."""
        self._inbound.append(p)
        self._inbound.sort(key=lambda q: q.start)
        self._schedule_inbound()

    def _schedule_inbound(self) -> None:
        """While listening, plan the ADDRESS of the first packet that starts
        after listening began; drop the ones that began before."""
        if self.state != RX or self._rx is not None:
            return
        since = self._listen_since
        while self._inbound and self._inbound[0].start < since:
            self._inbound.pop(0)
        if not self._inbound:
            return
        p = self._inbound[0]
        _s0, _lf, _lb, _s1, _s1r, plen, alen, _c, _m = self._layout()
        bt = 2048 if p.mode in (1, 4) else 4096
        t_addr = p.start + (plen + alen) * bt + self._chain(6, 2)
        self._cancel("rx_address")
        self._at(t_addr, "rx_address", p)

    def _hears(self, p: Packet):
        """The logical address that receives ``p`` now, or None."""
        freq = self._freq()
        if p.freq != freq or p.mode != self.values[MODE]:
            return None
        for logical in range(8):
            if self.values[RXADDRESSES] >> logical & 1 and self._address(logical) == p.aa:
                return logical
        return None

    def _do_rx_address(self, p: Packet) -> None:
        if p in self._inbound:
            self._inbound.remove(p)
        if self.state != RX:
            return
        logical = self._hears(p)
        if logical is None or not self.air.audible(p):
            self._schedule_inbound()
            return
        self._rx = p
        self.values[RXMATCH] = logical
        s0, lflen, lbytes, s1len, s1ram, _pl, _al, crclen, maxlen = self._layout()
        # the packet to RAM (EasyDMA), in the RAM layout
        pdu = p.pdu
        s1b = (s1len + 7) // 8
        head = pdu[:s0 + lbytes]
        length = int.from_bytes(head[s0:s0 + lbytes], "little") & ((1 << lflen) - 1)
        s1 = pdu[s0 + lbytes:s0 + lbytes + s1b] if s1len else (b"\x00" if s1ram else b"")
        payload = pdu[s0 + lbytes + s1b:][:min(length, maxlen)]
        try:
            self.soc.cpu.write_mem(self._rx_ptr, bytes(head) + bytes(s1) + payload)
        except Exception:
            self.log_once("rxptr", "PACKETPTR %#x is not RAM: packet dropped", self._rx_ptr)
        self._address_at = self.clock.now
        bt = self._byte_ticks()
        chain = self._chain(6, 2)
        t_payload_end = p.end - crclen * bt + chain
        self._at(t_payload_end, "rx_payload")
        self._at(p.end + chain, "rx_end", p)
        dacnf = self.values[DACNF]
        if dacnf & 0xFF:
            self._at(self.clock.now + 48 * bt // 8, "devmatch", payload[:6])
        self.fire(E_ADDRESS)

    def _do_devmatch(self, adva: bytes) -> None:
        dacnf = self.values[DACNF]
        if len(adva) == 6:
            a = int.from_bytes(adva, "little")
            txadd = (self._rx.pdu[0] >> 6) & 1 if self._rx is not None and self._rx.pdu else 0
            for i in range(8):
                if not dacnf >> i & 1:
                    continue
                want = self.values[0x600 + 4 * i] | (self.values[0x620 + 4 * i] << 32)
                if a == want and txadd == (dacnf >> (8 + i)) & 1:
                    self.values[DAI] = i
                    self.fire(E_DEVMATCH)
                    return
        self.fire(E_DEVMISS)

    def _do_rx_payload(self, _arg) -> None:
        self.fire(E_PAYLOAD)

    def _do_rx_end(self, p: Packet) -> None:
        self._rx = None
        crc = self._crc(p.aa, p.pdu)
        ok = crc == p.crc and self._whitening() == p.white and self.air.intact(p)
        self.values[CRCSTATUS] = 1 if ok else 0
        self.values[RXCRC] = p.crc
        self._last_end = (p.end, False)
        self.state = RXIDLE
        self._listen_since = None
        crc_event = E_CRCOK if ok else E_CRCERROR
        if crc_event in self.EVENTS:           # (the nRF51 has neither)
            self.fire(crc_event)
        self.fire(E_END)

    # -- snapshots -----------------------------------------------------------
    def save_model_state(self) -> dict:
        return {"state": self.state, "due": [(w, s, a, tuple(x) if isinstance(x, Packet) else x)
                                             for (w, s, a, x) in self._due],
                "seq": self._seq, "tx": tuple(self._tx) if self._tx else None,
                "rx": tuple(self._rx) if self._rx else None,
                "listen_since": self._listen_since, "last_end": self._last_end,
                "inbound": [tuple(p) for p in self._inbound], "address_at": self._address_at,
                "rssi": self._rssi, "rx_ptr": self._rx_ptr}

    def load_model_state(self, st: dict) -> None:
        def pkt(t):
            return Packet(*t) if t is not None else None
        self.state = st.get("state", 0)
        self._due = [(w, s, a, Packet(*x) if isinstance(x, (tuple, list)) and len(x) == 9
                      else x) for (w, s, a, x) in st.get("due", [])]
        self._seq = st.get("seq", 0)
        self._tx, self._rx = pkt(st.get("tx")), pkt(st.get("rx"))
        self._listen_since = st.get("listen_since")
        le = st.get("last_end")
        self._last_end = tuple(le) if le is not None else None
        self._inbound = [Packet(*t) for t in st.get("inbound", [])]
        self._address_at = st.get("address_at")
        self._rssi = st.get("rssi", 0)
        self._rx_ptr = st.get("rx_ptr", 0)
        self._ev.cancel()
        if self._due:
            self._ev.schedule_at(self._due[0][0])
