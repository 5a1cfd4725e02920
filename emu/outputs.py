"""Everything the emulator writes goes through here: nothing it writes destroys
what it was given, or what was there before.

Three parts, used by the machine (snapshots, screenshots, the NOR flash file,
traces, VCDs) and by every front end (their command-line options):

* :class:`Files`: the files one command reads and writes, declared before
  anything runs.  :meth:`Files.problem` compares every output with every
  input and with the other outputs by file identity (device and inode for a
  file that exists, so symbolic and hard links are caught; the resolved path
  for one that does not yet) and says, in one line naming both options, which
  two clash.  An output may be declared to replace an input on purpose
  (``--snapshot S --save-snapshot S`` continues a snapshot in place: S is
  read whole before the run and saved atomically after it).
* :func:`atomic_write`: a file written in one piece (a snapshot, a PNG, a
  recording, a report, the flash image) goes to a temporary file in the
  destination's folder, is synced and is moved over the destination only when
  complete.  An exception, Ctrl-C or a full disk leaves the previous file
  byte for byte and removes the temporary file; a kill -9 leaves the previous
  file (or the new one) and a hidden temporary file, ``.NAME.PID.*.tmp``,
  which the next save to the same destination removes once that process is
  gone.
* :class:`StreamOutput`: a file written as the run goes (an instruction or
  peripheral trace, a VCD).  It writes whole lines in chunks; a write error
  (full disk, a removed folder) truncates the file back to the last whole
  chunk, stops the stream, and calls ``on_error`` once with a one-line
  message naming the file: what is left is a valid prefix.

It imports nothing of ours (the ``base`` layer of docs/architecture.md).
"""
from __future__ import annotations

import errno
import os
import stat
import tempfile
from typing import Callable, Optional, Union

TMP_SUFFIX = ".tmp"
_os_write = os.write          # the one call that writes bytes (tests inject errors here)


# ---------------------------------------------------------------------------
# checks before a run
# ---------------------------------------------------------------------------
def output_path_problem(path: str) -> Optional[str]:
    """Why a file cannot be written at ``path`` (None if it can): checked before
    a run, so a long run never ends in a failed save."""
    if path == "":
        return "empty file name"
    if os.path.isdir(path):
        return "is a directory"
    if os.path.exists(path) and not os.path.isfile(path):
        return "not a regular file"             # /dev/null, a FIFO, a device: give a file
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        return f"directory {parent} does not exist"
    if not os.access(parent, os.W_OK | os.X_OK) or (os.path.exists(path)
                                                     and not os.access(path, os.W_OK)):
        return "not writable"
    return None


def path_problem(path: str) -> Optional[str]:
    """Why ``path`` cannot name a file at all (None if it can): the system
    ends a file name at its first NUL byte, so one inside is refused rather
    than cut short (a command line cannot hold one; a scenario file, a
    script or a Python caller can)."""
    if "\x00" in str(path):
        return "a file name cannot hold a NUL byte"
    return None


def shown_path(path) -> str:
    """``path`` for a one-line message: a NUL byte written as \\0."""
    return str(path).replace("\x00", "\\0")


def file_identity(path: str) -> tuple:
    """What makes two paths the same file: (device, inode) of a file that
    exists (through symbolic links; hard links share it), else the path with
    every symbolic link resolved (a path no file can have, one holding a NUL
    byte, is only itself)."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        try:
            return ("path", os.path.realpath(os.path.abspath(path)))
        except ValueError:
            return ("path", str(path))
    return ("inode", st.st_dev, st.st_ino)


class _Entry:
    __slots__ = ("label", "path", "output", "kind", "may_replace", "check", "checked",
                 "identity")

    def __init__(self, label, path, output, kind, may_replace, check, checked=True):
        self.label, self.path, self.output = label, str(path), output
        self.kind = kind if kind is not None else label
        self.may_replace = frozenset(may_replace)
        self.check = check
        self.checked = checked
        self.identity = None

    def __str__(self) -> str:
        return f"{self.label} {shown_path(self.path)}"


class Files:
    """The files one command reads and writes.

    ``read(label, path)`` and ``write(label, path)`` declare them (``label`` is
    what the user wrote: an option, ``FIRMWARE``, a scenario step); then
    :meth:`problem` gives the first problem in one line, or None.  ``kind``
    groups declarations for the exceptions (default: the label); an output
    may be the same file as a declaration whose kind is in ``may_replace``
    (an in-place update, read whole before it is written), and two outputs of
    one kind may be the same file only if that kind is in ``may_replace``
    too (the same step writing its file again).  ``check(path)`` adds a
    problem of that output's own (the flash file's size); ``checked=False``
    leaves an output out of the path checks (a default file whose folder is
    made when it is first saved) but not out of the clash checks."""

    def __init__(self):
        self.entries: list = []

    def read(self, label: str, path, kind: Optional[str] = None) -> None:
        if path is not None:
            self.entries.append(_Entry(label, path, False, kind, (), None))

    def write(self, label: str, path, kind: Optional[str] = None, may_replace=(),
              check: Optional[Callable[[str], Optional[str]]] = None,
              checked: bool = True) -> None:
        if path is not None:
            self.entries.append(_Entry(label, path, True, kind, may_replace, check, checked))

    @property
    def outputs(self) -> list:
        return [e for e in self.entries if e.output]

    def unnamable(self) -> Optional[str]:
        """The first path no file can have (a NUL byte in it), in one line
        naming its option, or None."""
        for e in self.entries:
            problem = path_problem(e.path)
            if problem is not None:
                return f"{e}: {problem}"
        return None

    def clash(self) -> Optional[str]:
        """The first output that is the same file as an input or as another
        output (one line naming both), or None."""
        for e in self.entries:
            e.identity = file_identity(e.path)
        for i, out in enumerate(self.entries):
            if not out.output:
                continue
            for j, other in enumerate(self.entries):
                if j == i or (other.output and j > i) or other.identity != out.identity:
                    continue
                if other.kind in out.may_replace or out.kind in other.may_replace:
                    continue
                if other.output:
                    return (f"{other} and {out} are the same file: give each output "
                            f"a file of its own")
                return (f"{out} is the same file as {other}: it would be overwritten; "
                        f"give another file name")
        return None

    def problem(self) -> Optional[str]:
        """A path no file can have (a NUL byte in it), then clashes, then each
        output's own problem (a missing folder, a directory, not writable,
        its ``check``): one line, or None."""
        problem = self.unnamable() or self.clash()
        if problem is not None:
            return problem
        for e in self.outputs:
            if not e.checked:
                continue
            problem = output_path_problem(e.path)
            if problem is None and e.check is not None:
                problem = e.check(e.path)
            if problem is not None:
                return f"{e}: {problem}"
        return None


# ---------------------------------------------------------------------------
# whole-file outputs
# ---------------------------------------------------------------------------
def _write_all(fd: int, data) -> None:
    view = memoryview(data).cast("B")
    while view:
        n = _os_write(fd, view)
        if n <= 0:                      # not expected from a regular file
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        view = view[n:]


def _new_file_mode() -> int:
    """0666 less the umask, as open() would create the file (mkstemp makes 0600)."""
    try:                                  # Linux: read it without changing it
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return 0o666 & ~int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o22)                 # elsewhere: set and put back at once
    os.umask(mask)
    return 0o666 & ~mask


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, ValueError):
        return True
    return True


def _sweep(folder: str, name: str) -> list:
    """Remove temporary files for ``name`` left by processes that no longer
    exist (a save killed with kill -9); the paths removed."""
    prefix = f".{name}."
    removed: list = []
    try:
        names = os.listdir(folder)
    except OSError:
        return removed
    for n in names:
        if not (n.startswith(prefix) and n.endswith(TMP_SUFFIX)):
            continue
        pid = n[len(prefix):].split(".", 1)[0]
        if pid.isdigit() and not _pid_alive(int(pid)):
            try:
                os.unlink(os.path.join(folder, n))
                removed.append(os.path.join(folder, n))
            except OSError:
                pass
    return removed


def sweep_temporaries(path: str) -> list:
    """Remove what saves to ``path`` killed midway left beside it (their
    process is gone); the paths removed.  A save does this by itself; a
    file the emulator keeps (the NOR flash) calls it when it is opened."""
    folder, name = os.path.split(os.path.realpath(path))
    return _sweep(folder, name)


def temporary_files(path: str) -> list:
    """The temporary files of saves to ``path`` present now (for tests and tools)."""
    dest = os.path.realpath(path)
    folder, name = os.path.split(dest)
    try:
        return sorted(os.path.join(folder, n) for n in os.listdir(folder)
                      if n.startswith(f".{name}.") and n.endswith(TMP_SUFFIX))
    except OSError:
        return []


def atomic_write(path: str, data: Union[bytes, bytearray, memoryview, str]) -> None:
    """Write ``data`` to ``path`` in one piece: a temporary file in the same
    folder, flushed and synced, then renamed over ``path``.  On any failure
    (an OSError such as ENOSPC, KeyboardInterrupt) the previous file is left
    as it was and the temporary file is removed; the error is raised.  A
    symbolic link is written through (its target is replaced); the new file
    keeps the old one's permission bits (a new one gets 0666 less the
    umask).  A destination that is not a regular file (a FIFO, /dev/null) is
    written directly."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    dest = os.path.realpath(path)
    try:
        st = os.stat(dest)
    except FileNotFoundError:
        st = None
    if st is not None and not stat.S_ISREG(st.st_mode):
        fd = os.open(dest, os.O_WRONLY | getattr(os, "O_CLOEXEC", 0))
        try:
            _write_all(fd, data)
        finally:
            os.close(fd)
        return
    folder, name = os.path.split(dest)
    _sweep(folder, name)
    fd, tmp = tempfile.mkstemp(prefix=f".{name}.{os.getpid()}.", suffix=TMP_SUFFIX,
                               dir=folder)
    try:
        try:
            os.fchmod(fd, stat.S_IMODE(st.st_mode) if st is not None else _new_file_mode())
            _write_all(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, dest)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    try:                                  # the rename itself survives a power cut
        dfd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(dfd)
    except OSError:
        pass
    finally:
        os.close(dfd)


# ---------------------------------------------------------------------------
# streams
# ---------------------------------------------------------------------------
class StreamOutput:
    """A text file written as the run goes, in whole lines.

    ``write(text)`` buffers; the buffer goes to the file, up to its last
    newline, when it reaches ``chunk`` characters, on ``flush()`` and on
    ``close()`` (which writes the rest).  If a write fails the file is cut
    back to the end of the last chunk written whole, the stream stops (later
    writes are dropped), ``error`` holds the one-line message
    (``PATH: cannot write (No space left on device)``) and ``on_error`` is
    called with it, once.  Opening the file raises OSError as open() does."""

    CHUNK = 1 << 16

    def __init__(self, path: str, encoding: str = "utf-8",
                 on_error: Optional[Callable[[str], None]] = None, chunk: int = CHUNK):
        self.path = str(path)
        self.encoding = encoding
        self.on_error = on_error
        self.chunk = chunk
        self._fd: Optional[int] = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC
                                          | getattr(os, "O_CLOEXEC", 0), 0o666)
        self._buf: list = []
        self._n = 0
        self._good = 0                  # bytes in the file, ending at a chunk's end
        self.error: Optional[str] = None
        self.closed = False

    def write(self, text: str) -> int:
        if self._fd is None:
            return 0
        self._buf.append(text)
        self._n += len(text)
        if self._n >= self.chunk:
            self._flush_lines()
        return len(text)

    def writable(self) -> bool:
        return True

    def _flush_lines(self) -> None:
        text = "".join(self._buf)
        cut = text.rfind("\n") + 1
        self._buf = [text[cut:]] if cut < len(text) else []
        self._n = len(text) - cut
        if cut:
            self._put(text[:cut])

    def _put(self, text: str) -> None:
        data = text.encode(self.encoding, "replace")
        try:
            _write_all(self._fd, data)
        except OSError as e:
            self._fail(e)
            return
        self._good += len(data)

    def _fail(self, e: OSError) -> None:
        fd, self._fd = self._fd, None
        self._buf, self._n = [], 0
        if fd is not None:
            try:
                os.ftruncate(fd, self._good)   # what reached the file of the failed chunk
            except OSError:
                pass
            try:
                os.close(fd)
            except OSError:
                pass
        self.error = f"{self.path}: cannot write ({e.strerror or e})"
        if self.on_error is not None:
            self.on_error(self.error)

    def flush(self) -> None:
        if self._fd is not None and self._buf:
            self._flush_lines()

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        if self._fd is None:
            return
        rest = "".join(self._buf)
        self._buf, self._n = [], 0
        if rest:
            self._put(rest)
        if self._fd is not None:
            fd, self._fd = self._fd, None
            try:
                os.close(fd)
            except OSError as e:          # NFS and the like report late errors here
                self._fail(e)
