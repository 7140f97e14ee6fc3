"""Run a command as an ordinary user, so file permissions apply to it: root reads and writes anything. As root the
command runs as nobody (uid 65534, through setpriv) on a tree under /tmp that nobody owns (pytest's own temporary
folders are root's and 0700); as any other user it runs as that user."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from pathlib import Path

from support.harness import REPO

NOBODY = 65534


@contextlib.contextmanager
def user_folder():
    """A folder under /tmp for the tree the command works on; hand it over with ``give_to_user`` once built."""
    folder = Path(tempfile.mkdtemp(prefix="as-user-", dir="/tmp"))
    os.chmod(folder, 0o755)
    try:
        yield folder
    finally:
        for root, dirs, _ in os.walk(folder):  # a folder a test made unreadable, readable again to remove it
            for name in dirs:
                path = os.path.join(root, name)
                if not os.path.islink(path):
                    os.chmod(path, 0o755)
        shutil.rmtree(folder)


def tools_for_user(folder: Path) -> Path:
    """A copy of the bundle's scripts/ and skills/ in ``folder``, whose scripts/ the command runs: the checkout may
    sit under a folder only root can enter (a clone in a mktemp folder, 0700), where nobody cannot read the tool. The
    bundle tools are standard library only, so the copy runs as the checkout's does."""
    litter = shutil.ignore_patterns("__pycache__")
    for part in ("scripts", "skills"):
        shutil.copytree(REPO / part, folder / "bundle" / part, ignore=litter)
    return folder / "bundle" / "scripts"


def give_to_user(folder: Path) -> None:
    if os.geteuid() == 0:
        for path in [folder, *folder.rglob("*")]:
            os.lchown(path, NOBODY, NOBODY)


def as_user(command: list[str]) -> list[str]:
    if os.geteuid() != 0:
        return command
    return ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", *command]
