"""Writing results safely.

- `check_output` runs before any work: the output must not be the input (the same path,
  a symlink to it, or a hard link: the same file by `os.path.samefile`), and its
  directory must exist and be writable. Problems are `InputError`s (exit status 2).
- `write_atomically` writes text as the bytes it came from (surrogate escapes, see
  `frontend.read_source`): through symlinks to the file they name (the link stays a
  link); to a device or a pipe (`/dev/null`, a FIFO) by writing into it, never by
  renaming a file over it; and to a regular file atomically, through a temporary file in
  the same directory renamed over it, keeping its permissions (and its owner when the
  process may set it).
- `relocate_includes` keeps the output's quoted includes naming the files the input's
  did, when the output goes to another directory.
"""

from __future__ import annotations

import os
import re
import stat
import sys
import tempfile

from polycoal.diagnostics import InputError

ENCODING = "utf-8"
ERRORS = "surrogateescape"      # bytes that are not UTF-8 travel as lone surrogates


def encode(text: str) -> bytes:
    """The bytes of `text` as read by `frontend.read_source`."""
    return text.encode(ENCODING, ERRORS)


def decode(data: bytes) -> str:
    """`data` as text, every byte kept (see `encode`)."""
    return data.decode(ENCODING, ERRORS)


def _is_stdout(path: str | None) -> bool:
    return path is None or path == "-"


def same_file(a: str, b: str) -> bool:
    """Whether two paths name one file (a link, a hard link); where either cannot be
    looked at (it does not exist, `<stdin>.cu`), whether they are the same path."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.abspath(a) == os.path.abspath(b)


def _special(path: str) -> bool:
    """An existing non-regular file other than a directory (a device, a FIFO, a socket)."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return not stat.S_ISREG(mode) and not stat.S_ISDIR(mode)


def check_output(path: str | None, inputs: tuple[str | None, ...] = ()) -> None:
    """Raise InputError unless `path` (`-` or None: standard output) can take the output
    of a command reading `inputs`."""
    if _is_stdout(path):
        return
    for source in inputs:
        if not _is_stdout(source) and same_file(path, source):
            raise InputError(f"{path}: is the input file {source}; polycoal never "
                             "overwrites its input (name another output file)")
    target = os.path.realpath(path)
    if os.path.isdir(target):
        raise InputError(f"{path}: is a directory")
    if _special(target):
        if not os.access(target, os.W_OK):
            raise InputError(f"{path}: not writable")
        return
    directory = os.path.dirname(target)
    if os.path.exists(directory) and not os.path.isdir(directory):
        raise InputError(f"{path}: {directory} is not a directory")
    if not os.path.isdir(directory):
        raise InputError(f"{path}: directory {directory} does not exist")
    if not os.access(directory, os.W_OK | os.X_OK):
        raise InputError(f"{path}: directory {directory} is not writable")


def _new_file_mode() -> int:
    """The permissions `open` would give a new file (0o666 less the umask)."""
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def _replace(target: str, data: bytes) -> None:
    """Write `data` to a temporary file beside `target` and rename it over `target`."""
    try:
        old = os.stat(target)
    except FileNotFoundError:
        old = None
    fd, tmp = tempfile.mkstemp(prefix=".polycoal-", dir=os.path.dirname(target))
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, old.st_mode & 0o777 if old else _new_file_mode())
        if old is not None and (old.st_uid, old.st_gid) != (os.getuid(), os.getgid()):
            try:
                os.chown(tmp, old.st_uid, old.st_gid)
            except OSError:
                pass                 # only a privileged process may give files away
        os.replace(tmp, target)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def write_atomically(path: str, text: str) -> None:
    """Write `text` to `path` as the module's docstring says; OSError -> InputError."""
    check_output(path)
    target = os.path.realpath(path)
    try:
        if _special(target):
            with open(target, "wb") as f:
                f.write(encode(text))
        else:
            _replace(target, encode(text))
    except OSError as error:
        raise InputError(f"{path}: cannot write: {error.strerror or error}") from error


def write_stdout(text: str) -> None:
    """Write `text` to standard output as bytes (see `encode`)."""
    buffer = getattr(sys.stdout, "buffer", None)
    if buffer is None:               # a replaced text stream
        sys.stdout.write(encode(text).decode(ENCODING, "replace"))
        return
    sys.stdout.flush()
    buffer.write(encode(text))
    buffer.flush()


_QUOTED_INCLUDE = re.compile(r'^([ \t]*#[ \t]*include[ \t]*")([^"\r\n]+)(")', re.M)


def relocate_includes(text: str, source: str | None, output: str | None) -> str:
    """`text` (the program read from `source`) with each `#include "name"` that names a
    file beside the source rewritten relative to the output's directory (the current
    directory for standard output), so that the output compiles where it is written
    (`polycoal transform dir/in.cu > out.cu && nvcc -c out.cu`). Includes found through
    -I directories, system includes, and every include when the output sits beside
    the source stay as they are; the preprocessor resolves a header's own includes from
    the header's directory, so only the top-level file needs this."""
    if _is_stdout(source):
        return text
    source_dir = os.path.dirname(os.path.realpath(source))
    if _is_stdout(output) or _special(os.path.realpath(output)):
        output_dir = os.getcwd()
    else:
        output_dir = os.path.dirname(os.path.realpath(output))
    if source_dir == output_dir:
        return text

    def relocated(m: re.Match) -> str:
        name = m.group(2)
        header = os.path.join(source_dir, name)
        if os.path.isabs(name) or not os.path.isfile(header) or \
                same_file(os.path.join(output_dir, name), header):
            return m.group(0)
        new = os.path.relpath(header, output_dir).replace(os.sep, "/")
        return m.group(1) + new + m.group(3)
    return _QUOTED_INCLUDE.sub(relocated, text)
