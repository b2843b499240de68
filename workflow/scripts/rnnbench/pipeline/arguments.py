"""Argument types of the ``rnnbench`` subcommands.

Each refuses a bad value when the command line is read, before any work starts. argparse then
exits with status 2 and one line naming the argument and the value.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Callable


def _integer(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None


def at_least(minimum: int, why: str = "", maximum: int | None = None,
             over: str = "") -> Callable[[str], int]:
    """Make the type of a whole number of at least ``minimum`` (and at most ``maximum``).

    Args:
        minimum: the smallest value allowed; 0 is refused as "0 or more".
        why: the reason for the minimum, in words, appended to its message.
        maximum: the largest value allowed; None for no bound.
        over: the reason for the maximum, in words, appended to its message.

    Returns:
        The type: text -> int. It raises argparse.ArgumentTypeError naming the value for text
        that is no whole number, or one below ``minimum`` or above ``maximum``.
    """
    def whole(text: str) -> int:
        value = _integer(text)
        if value < minimum:
            bound = "0 or more" if minimum == 0 else f"at least {minimum}"
            raise argparse.ArgumentTypeError(f"{value}: {bound}{why}")
        if maximum is not None and value > maximum:
            raise argparse.ArgumentTypeError(f"{value}: at most {maximum}{over}")
        return value

    return whole


positive_int = at_least(1)
"""A whole number of at least 1."""


def count(text: str) -> int:
    """Read a whole number of at least 0.

    Args:
        text: the argument's text.

    Returns:
        The number.

    Raises:
        argparse.ArgumentTypeError: naming the value otherwise.
    """
    value = _integer(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"{value}: 0 or more")
    return value


def _not_empty(text: str) -> Path:
    """``text`` as a path; an empty text (which Path reads as the working folder) is refused
    with argparse.ArgumentTypeError."""
    if not text.strip():
        raise argparse.ArgumentTypeError(f"{text!r} is empty: give a path")
    return Path(text)


def given_path(text: str) -> Path:
    """Read a path to read from, whatever is there (the command says what it must be).

    Args:
        text: the argument's text.

    Returns:
        The path.

    Raises:
        argparse.ArgumentTypeError: naming an empty text, which would be read as the working
            folder.
    """
    return _not_empty(text)


def _existing(kind: str, is_kind: Callable[[Path], bool], other: str) -> Callable[[str], Path]:
    """The type of an existing ``kind`` (file or folder): ``is_kind`` tells it, ``other``
    names what stands there instead."""
    def existing(text: str) -> Path:
        path = _not_empty(text)
        if not is_kind(path):
            raise argparse.ArgumentTypeError(
                f"{text}: {other if path.exists() else f'no such {kind}'}")
        return path

    return existing


existing_file = _existing("file", Path.is_file, "a folder, not a file")
"""A file that exists (its function raises ArgumentTypeError naming a missing path or a
folder)."""
existing_folder = _existing("folder", Path.is_dir, "a file, not a folder")
"""A folder that exists (its function raises ArgumentTypeError naming a missing path or a
file)."""


def output_folder(text: str) -> Path:
    """Read a folder to write into: an existing folder, or a path where one can be made.

    Args:
        text: the argument's text.

    Returns:
        The path (not created here).

    Raises:
        argparse.ArgumentTypeError: naming an empty text, a file (or a file above it) in
            the way, or a folder where nothing can be written.
    """
    import tempfile

    path = _not_empty(text)
    for part in (path, *path.parents):
        if part.exists() and not part.is_dir():
            raise argparse.ArgumentTypeError(f"{text}: {part} is a file, not a folder")
    nearest = next(part for part in (path, *path.parents) if part.exists())
    try:  # a trial file, gone at once: where nothing can be written, say so before any work
        with tempfile.TemporaryFile(dir=nearest):
            pass
    except OSError as error:
        raise argparse.ArgumentTypeError(f"{text}: nothing can be written in {nearest} "
                                         f"({error.strerror})") from None
    return path


def output_file(text: str) -> Path:
    """Read a file to write: a path that is no folder, under no file.

    Args:
        text: the argument's text.

    Returns:
        The path.

    Raises:
        argparse.ArgumentTypeError: naming an empty text, or the folder or the file in the way.
    """
    path = _not_empty(text)
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a folder: give a file")
    output_folder(str(path.parent))
    return path



def output_record(kind: str) -> Callable[[str], Path]:
    """Make the type of a JSON record file to write, which may replace only a record of its kind.

    Args:
        kind: the record's ``"kind"``; an existing file is overwritten only where it is a JSON
            object with that kind (an earlier record of the same command).

    Returns:
        The type: text -> Path (output_file's checks first). It raises
        argparse.ArgumentTypeError naming an existing file that is not such a record.
    """
    import json

    def record(text: str) -> Path:
        path = output_file(text)
        if not path.exists():
            return path
        try:
            found = json.loads(path.read_text())
        except (OSError, UnicodeDecodeError, ValueError):
            found = None
        if not (isinstance(found, dict) and found.get("kind") == kind):
            raise argparse.ArgumentTypeError(
                f"{text}: exists and is not a {kind} record (a JSON with \"kind\": "
                f"\"{kind}\"): not overwritten; give another path, or remove it")
        return path

    return record
