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


def at_least(minimum: int, why: str = "") -> Callable[[str], int]:
    """Make the type of a whole number of at least ``minimum``.

    Args:
        minimum: the smallest value allowed.
        why: the reason, in words, appended to the message.

    Returns:
        The type: text -> int. It raises argparse.ArgumentTypeError naming the value for text
        that is no whole number, or one below ``minimum``.
    """
    def whole(text: str) -> int:
        value = _integer(text)
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{value}: at least {minimum}{why}")
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


def _existing(kind: str, is_kind: Callable[[Path], bool], other: str) -> Callable[[str], Path]:
    """The type of an existing ``kind`` (file or folder): ``is_kind`` tells it, ``other``
    names what stands there instead."""
    def existing(text: str) -> Path:
        path = Path(text)
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
        argparse.ArgumentTypeError: naming a file (or a file above it) in the way.
    """
    path = Path(text)
    for part in (path, *path.parents):
        if part.exists() and not part.is_dir():
            raise argparse.ArgumentTypeError(f"{text}: {part} is a file, not a folder")
    return path


def output_file(text: str) -> Path:
    """Read a file to write: a path that is no folder, under no file.

    Args:
        text: the argument's text.

    Returns:
        The path.

    Raises:
        argparse.ArgumentTypeError: naming the folder or the file in the way.
    """
    path = Path(text)
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a folder: give a file")
    output_folder(str(path.parent))
    return path

