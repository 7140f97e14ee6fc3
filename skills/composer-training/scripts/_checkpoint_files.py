"""Reading Composer checkpoint files without running anything stored in them, for checkpoint_smoke.py (--load-path and
the torn files of its kill drills) and preflight.py (--load-path and the checkpoint autoresume's `latest` names).

checkpoint_problem uses the standard library alone, so a bad file is refused before torch is imported;
read_checkpoint opens a file with torch.load(weights_only=True) and an allowlist of plain-data types.
"""

from __future__ import annotations

import os
import pickletools
import zipfile
import zlib
from pathlib import Path

from smoke_contract import EXIT_USAGE, SmokeError

TRUST_FLAG = "--trust-checkpoint"  # preflight.py's: opens a checkpoint as Composer does, running its code
ENCRYPTED_FLAGS = 0x1 | 0x40  # a zip member's general purpose flags: encrypted, strongly encrypted
# what zipfile raises on damaged archives: bad records, bad names (UnicodeDecodeError), bad compressed data
ZIP_READ_ERRORS = (zipfile.BadZipFile, OSError, EOFError, ValueError, NotImplementedError, RuntimeError, zlib.error)


def checkpoint_problem(path: Path) -> str | None:
    """Why ``path`` is not a usable Composer checkpoint, found with the standard library alone (nothing is
    unpickled, torch is not imported, the file is only read), or None. torch.save writes a zip archive whose end
    record comes last, so a write cut short (a kill during the save, a full disk) leaves a file without one."""
    if path.is_symlink() and not path.exists():
        return f"is a symlink to {os.readlink(path)!r}, which does not exist; point it at a checkpoint that exists"
    if not path.is_file():
        return "is not a file"
    size = path.stat().st_size
    if size == 0:
        return ("is empty (0 bytes): its write was cut short before the first byte (a kill as the save began, a "
                "full disk); use the checkpoint saved before it")
    if not is_zip_archive(path):
        with open(path, "rb") as file:
            started_as_zip = file.read(4) == b"PK\x03\x04"
        if started_as_zip:
            return (f"is truncated ({size} bytes, its zip archive has no end record): its write was cut short (a kill "
                    "during the save, a full disk, an interrupted copy); use the checkpoint saved before it")
        return "is not a torch.save checkpoint (not a zip archive); pass a .pt file a Composer Trainer saved"
    try:
        with zipfile.ZipFile(path) as archive:
            unreadable = unreadable_member(archive)
            if unreadable:
                return unreadable
            corrupted = archive.testzip()  # torch.load does not check CRCs: a flipped byte would load silently
            pickles = [name for name in archive.namelist() if name.endswith("/data.pkl")]
            data = archive.read(pickles[0]) if len(pickles) == 1 and not corrupted else b""
    except ZIP_READ_ERRORS as exc:
        return f"is a damaged zip archive ({exc}); use the checkpoint saved before it"
    if corrupted:
        return f"is corrupted (archive member {corrupted!r} fails its CRC check); use another checkpoint"
    if len(pickles) != 1:
        return "is a zip archive but not a torch.save file (no data.pkl); pass a .pt file a Composer Trainer saved"
    try:  # read the pickle's opcodes without running them
        strings = {argument for _, argument, _ in pickletools.genops(data) if isinstance(argument, str)}
    except Exception as exc:  # noqa: BLE001 - any parse failure means a damaged pickle
        return f"holds a damaged pickle ({type(exc).__name__}: {exc}); use another checkpoint"
    if not {"state", "timestamp"} <= strings:
        return ("is a torch.save file but not a Composer checkpoint (no state/timestamp); pass a .pt file a "
                "Composer Trainer saved")
    return None


def is_zip_archive(path: Path) -> bool:
    """Whether ``path`` ends with a zip end record; zipfile.is_zipfile raises on some damaged ones instead of
    answering (they are zip archives: opening one reports the damage)."""
    try:
        return zipfile.is_zipfile(path)
    except zipfile.BadZipFile:
        return True


def unreadable_member(archive: zipfile.ZipFile) -> str | None:
    """Why torch.load cannot read a member of ``archive`` (encrypted, or compressed other than deflate: torch.save
    stores members as they are), or None."""
    for member in archive.infolist():
        if member.flag_bits & ENCRYPTED_FLAGS:
            return (f"is an encrypted zip archive (member {member.filename!r}), which torch.load cannot read; "
                    "torch.save never encrypts: use the checkpoint as the Trainer saved it")
        if member.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
            method = zipfile.compressor_names.get(member.compress_type, "unknown")
            return (f"is a zip archive whose member {member.filename!r} is compressed with method "
                    f"{member.compress_type} ({method}), which torch.load cannot read; torch.save stores members "
                    "uncompressed: use the checkpoint as the Trainer saved it")
    return None


def read_checkpoint(path: Path, named: str, trust: bool = False,
                    if_untrusted: str = f"open it only if you trust it (then add {TRUST_FLAG})"):
    """A Composer checkpoint's ``state`` dict and Timestamp, read with torch.load(weights_only=True) and an allowlist
    of the plain-data types Composer saves, so no code from the file runs; ``trust`` reads it as Composer does
    (weights_only=False: any code stored in the file runs). A file that holds more than plain data, that torch.load
    cannot read or that is no Composer checkpoint is exit 2, its message starting with ``named``."""
    import datetime
    import pickle

    import numpy
    import torch
    from composer.core import Timestamp

    numpy_core = getattr(numpy, "_core", None) or numpy.core  # numpy 2: _core; numpy 1.x: core
    dtypes = getattr(numpy, "dtypes", None)  # numpy >= 1.25 (mosaicml allows 1.21.5)
    dtype_classes = [getattr(dtypes, name) for name in dir(dtypes) if name.endswith("DType")] if dtypes else []
    plain_data = [datetime.timedelta, torch.torch_version.TorchVersion, numpy_core.multiarray._reconstruct,
                  numpy.ndarray, numpy.dtype, *dtype_classes]
    try:
        if trust:
            saved = torch.load(path, map_location="cpu", weights_only=False)
        else:
            with torch.serialization.safe_globals(plain_data):
                saved = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # noqa: BLE001 - whatever torch.load raises, the file is refused with the reason
        # torch wraps the unpickler's reason in advice: keep its last line before the link to the documentation
        lines = [line.strip() for line in str(exc).split("Check the documentation")[0].splitlines() if line.strip()]
        reason = lines[-1].removeprefix("WeightsUnpickler error: ").rstrip(".")[:300] if lines else type(exc).__name__
        if isinstance(exc, pickle.UnpicklingError) and not trust:  # the weights-only unpickler stopped first
            raise SmokeError(f"{named} holds objects beyond plain data ({reason}): Composer unpickles checkpoints with "
                             f"torch.load(weights_only=False), which would run code stored in the file; {if_untrusted}",
                             EXIT_USAGE) from None
        raise SmokeError(f"{named} cannot be read by torch.load ({type(exc).__name__}: {reason}); use another "
                         "checkpoint", EXIT_USAGE) from None
    state = saved.get("state") if isinstance(saved, dict) else None
    try:
        timestamp = Timestamp()
        timestamp.load_state_dict(state["timestamp"]["Timestamp"])
        if not isinstance(state["model"], dict):
            raise TypeError("state/model is not a dict")
    except (KeyError, TypeError, ValueError) as exc:
        raise SmokeError(f"{named} is not a Composer checkpoint (no readable state/timestamp and state/model: "
                         f"{type(exc).__name__}: {exc}); pass a .pt file a Composer Trainer saved",
                         EXIT_USAGE) from None
    return state, timestamp


def torn_checkpoints(folder: Path) -> list[Path]:
    """Checkpoint files whose write was cut short: no zip end record (empty files included)."""
    return sorted(path for path in folder.glob("*.pt")
                  if path.is_file() and not path.is_symlink() and not is_zip_archive(path))


def set_aside_torn_checkpoints(folder: Path) -> list[Path]:
    """What the skill tells users to run before relaunching a killed autoresume job: rename torn checkpoints to
    <name>.partial (kept for a look, out of Composer's way), so the relaunch resumes from `latest`."""
    torn = torn_checkpoints(folder)
    for path in torn:
        path.rename(path.with_name(path.name + ".partial"))
    return torn
