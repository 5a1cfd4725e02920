"""The phone's side of Bluetooth: what plays Gadgetbridge, nRF Connect and
wasptool against the watch.  Nothing here is part of the nRF52832; the
machine (emu/machine.py) wires a phone to its board as it wires a touch
panel, and front ends drive it through ``machine.phone``.

Layers, bottom up (each module imports only those below it, and the
machine's air, SoftDevice model and clock):

* ``errors``     PhoneError, raised by every part;
* ``scanner``    the passive scanner: advertising on the emulated air;
* ``link``       the link-layer central and L2CAP (connection events,
                 channel hopping, acknowledgement, encryption);
* ``smp``        LE Secure Connections pairing over the link;
* ``gatt``       the GATT client over the link's ATT channel;
* ``gattphone``  Gadgetbridge's InfiniTime services (firmware with its own
                 Bluetooth stack);
* ``airnus``     the Nordic UART Service over the air (the real S132);
* ``wasptool``   wasptool's verbs over any byte transport;
* ``phone``      :class:`Phone`, ``machine.phone``: Gadgetbridge's
                 messages over the Nordic UART Service, dispatched to the
                 emulated SoftDevice's central, the air, or ``gattphone``.

A new phone feature goes in the lowest module that can carry it; a new
way to reach the phone from the host (a server, a command) goes in
frontends/.
"""
from emu.phone.errors import PhoneError
from emu.phone.phone import Phone

__all__ = ["Phone", "PhoneError"]
