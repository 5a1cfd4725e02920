"""The one error every part of the phone raises (scenario steps and the
window report it as a line): below the GATT client, the link and the phone
so that none of them imports another for it."""


class PhoneError(Exception):
    pass
