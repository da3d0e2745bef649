"""A folder of contracts walked within bounds: a folder that cannot be read is an error at its
path, and past MAX_FOLDER_ENTRIES names or MAX_FOLDER_BYTES of files to read the walk stops with
an error (`diff /` reads no disk)."""

from __future__ import annotations

import os
from pathlib import Path

# names looked at under one folder given (files and folders, hidden ones not entered): a folder of
# contracts holds far fewer; a walk of `/`, a home folder or a mount stops here, and says so
MAX_FOLDER_ENTRIES = 100_000
# bytes of the files it would read (each is at most loader.MAX_FILE_BYTES): past this, none is read
MAX_FOLDER_BYTES = 512 * 1024 * 1024


def walk_folder(folder: Path, suffixes: tuple[str, ...]) -> tuple[list[Path], list[tuple[str, str]]]:
    """The files under `folder` whose name ends in one of `suffixes` (in lower case), no hidden
    folder entered and no symbolic link to a folder followed, sorted; and (path, why) for each
    folder that could not be read, each link out of it, or the walk that passed a limit (then
    nothing is found)."""
    found: list[Path] = []
    failed: list[tuple[str, str]] = []

    def unreadable(error: OSError) -> None:
        failed.append((str(error.filename or folder), f"cannot be read as a folder of contracts "
                                                    f"({error.strerror or type(error).__name__})"))

    seen = size = 0
    for top, folders, files in os.walk(folder, onerror=unreadable):
        folders[:] = sorted(f for f in folders if not f.startswith("."))
        seen += len(folders) + len(files)
        if seen > MAX_FOLDER_ENTRIES:
            return [], [(str(folder), f"holds more than {MAX_FOLDER_ENTRIES:,} files and folders: not read as "
                                      "a folder of contracts; name the folder that holds them")]
        for name in files:
            if not name.startswith(".") and name.lower().endswith(suffixes):
                found.append(Path(top, name))
                size += _size(found[-1])
        if size > MAX_FOLDER_BYTES:
            return [], [(str(folder), f"holds more than {MAX_FOLDER_BYTES // 1024 // 1024:,} MiB of contract files "
                                      f"({', '.join(suffixes)}): not read; name the folder that holds the contracts")]
    return _inside(folder, sorted(found), failed)


def _inside(folder: Path, found: list[Path], failed: list[tuple[str, str]]) -> tuple[list[Path], list[tuple[str, str]]]:
    """The files found that are files inside the folder; a symbolic link out of it (/proc/kmsg blocks
    whoever reads it) is refused, said at its path."""
    real_folder = os.path.realpath(folder).rstrip(os.sep) + os.sep
    inside = []
    for candidate in found:
        if os.path.isfile(candidate):  # never raises: a link it cannot follow is no file
            if os.path.realpath(candidate).startswith(real_folder):
                inside.append(candidate)
            else:
                failed.append((_shown(candidate), "a symbolic link to a file outside the folder loaded; not read"))
    return inside, failed


def _shown(path: Path) -> str:
    try:
        return os.path.relpath(path)
    except ValueError:  # another drive on Windows
        return str(path)


def _size(path: Path) -> int:
    try:
        return os.stat(path).st_size
    except OSError:  # a link that cannot be followed: the loader says so when it reads it
        return 0
