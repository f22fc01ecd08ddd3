"""Files written whole or not at all: a temporary file beside the target, then one atomic rename or link.

- :func:`temp_beside` creates the temporary file (hidden, same folder, so the rename stays on one file system)
  with the permissions an ordinary ``open(path, "w")`` would give under the user's umask (``mkstemp`` alone
  gives 0600);
- :func:`commit` puts it in place: ``os.replace`` when overwriting is allowed, else a hard link that fails if
  the target appeared meanwhile (falling back to a checked ``os.replace`` on file systems without links);
- :func:`fsync_dir` makes the rename durable;
- :func:`written_whole` wraps the three for a writer that needs a file object (a picture, a JSON summary).
"""

from __future__ import annotations

import contextlib
import errno
import os
import tempfile


def user_file_mode() -> int:
    """``0o666`` less the process umask: the mode ``open(path, "w")`` creates files with."""
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def temp_beside(path: str, suffix: str = ".tmp") -> tuple[int, str]:
    """``(fd, temp path)`` of a new hidden file in ``path``'s folder (created if missing), user-umask mode."""
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{os.path.basename(path)}.", suffix=suffix)
    os.fchmod(fd, user_file_mode())
    return fd, tmp


def commit(tmp: str, path: str, overwrite: bool, what: str = "recorded layouts") -> None:
    """Moves ``tmp`` onto ``path`` atomically; without ``overwrite`` an existing ``path`` raises
    ``FileExistsError`` and is left as it was (``tmp`` is then still there for the caller to remove)."""
    if overwrite:
        os.replace(tmp, path)
        return
    try:
        os.link(tmp, path)  # atomic, and refuses an existing path
    except FileExistsError:
        raise FileExistsError(f"'{path}' already exists; {what} are never overwritten") from None
    except OSError as err:
        if err.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK):
            raise
        if os.path.exists(path):  # file system without hard links
            raise FileExistsError(f"'{path}' already exists; {what} are never overwritten") from None
        os.replace(tmp, path)
        return
    os.unlink(tmp)


def fsync_dir(folder: str) -> None:
    """Flushes a folder's entries (a rename into it) to disk; silently skipped where not supported."""
    try:
        dfd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dfd)
    except OSError:
        pass
    finally:
        os.close(dfd)


@contextlib.contextmanager
def written_whole(path: str, mode: str = "w", suffix: str = ".tmp"):
    """``with written_whole(path, "wb") as f: ...``: ``f`` is a temporary file beside ``path`` (unique: processes
    sharing a folder never share one); when the block ends it replaces ``path`` in one rename. An exception or an
    interruption (``KeyboardInterrupt``) in the block leaves the old file (or none) and removes the temporary one."""
    fd, tmp = temp_beside(path, suffix=suffix)
    try:
        with os.fdopen(fd, mode, **({} if "b" in mode else {"encoding": "utf-8"})) as f:
            yield f
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def write_text_atomic(path: str, text: str) -> str:
    """Writes ``text`` (UTF-8) to ``path`` through a temporary file beside it, fsync and one rename (overwrites);
    a failure leaves the old file (or none) and no temporary file (:func:`written_whole`). Returns the path."""
    with written_whole(path) as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    fsync_dir(os.path.dirname(os.path.abspath(path)))
    return path
