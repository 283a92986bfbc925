"""Download catalogue models from the hub with resume, progress and cancel; verify before use.

huggingface_hub's own `hf_hub_download` retries a broken stream within one call, but it writes
to a per-process temporary file and deletes it on failure, so a download that is cancelled,
killed or loses the network for long is restarted from zero. A 300 MB model on a laptop link
must survive that, so the transfer is done here with HTTP Range requests against the hub's
`resolve` URL (built by huggingface_hub, honouring HF_ENDPOINT), into a `.part` file that a
later call continues.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from apus import __version__, paths
from apus.embed.local.catalog import HubFile, ModelManifest, load_catalog
from apus.embed.local.filehash import file_sha256
from apus.embed.local.gguf_info import GGUF_MAGIC
from apus.errors import ApusError
from apus.units import human_size

if TYPE_CHECKING:
    import httpx

Progress = Callable[[int, int], None]

_RETRY_PAUSE_S = 0.5
_VERIFIED_SUFFIX = ".verified.json"


class DownloadError(ApusError):
    """A model could not be downloaded or failed verification."""


class DownloadCancelled(DownloadError):
    """The caller cancelled; the partial file is kept so the next pull resumes."""


@dataclass(frozen=True)
class InstalledModel:
    manifest: ModelManifest
    path: Path
    verified: bool


def model_path(manifest: HubFile) -> Path:
    """Where the verified file of a catalogue model lives."""
    return paths.models_dir() / manifest.name / manifest.file


def quarantine_dir() -> Path:
    return paths.models_dir() / "quarantine"


def hub_endpoint() -> str:
    """The hub base URL; HF_ENDPOINT is read at call time so a mirror set later still counts."""
    # Imported here: huggingface_hub costs a fifth of a second, and only downloads need it.
    from huggingface_hub import constants as hf_constants

    return (os.environ.get("HF_ENDPOINT") or hf_constants.ENDPOINT).rstrip("/")


def download_url(manifest: HubFile) -> str:
    from huggingface_hub import hf_hub_url

    return hf_hub_url(
        manifest.repo, manifest.file, revision=manifest.revision, endpoint=hub_endpoint()
    )


def pull_model(
    manifest: HubFile,
    *,
    progress: Progress | None = None,
    cancel: threading.Event | None = None,
    retries: int = 3,
) -> Path:
    """Download (or resume) a catalogue model, verify it, and return its path.

    A file already in place is verified and kept; one that fails verification is moved to
    quarantine and downloaded again. Raises DownloadError (offline, HTTP error, checksum
    mismatch) or DownloadCancelled.
    """
    final = model_path(manifest)
    final.parent.mkdir(parents=True, exist_ok=True)
    with _locked(final, cancel):
        if final.is_file():
            try:
                verify_model_file(final, manifest, rehash=True)
            except DownloadError:
                pass  # quarantined by verify_model_file; fetch a good copy below
            else:
                if progress:
                    progress(manifest.size, manifest.size)
                return final
        part = final.with_name(f"{final.name}.{manifest.revision[:12]}.part")
        try:
            _transfer(manifest, part, progress=progress, cancel=cancel, retries=retries)
        except OSError as exc:  # the disk, not the network (httpx errors are not OSError)
            raise DownloadError(
                f"Cannot write {part}: {exc.strerror or exc}.",
                fix=f"free some disk space, then run `apus models pull {manifest.name}`",
            ) from exc
        _check(part, manifest, label="the downloaded file")
        os.replace(part, final)
        _write_verified(final, manifest.sha256)
        for stale in final.parent.glob(f"{final.name}.*.part"):
            stale.unlink(missing_ok=True)  # partial files of earlier revisions
        return final


def verify_model_file(
    path: Path, manifest: HubFile, *, quarantine: bool = True, rehash: bool = False
) -> None:
    """Check size, GGUF magic (of a .gguf file) and sha256; on mismatch quarantine the file
    and raise.

    A successful check is remembered beside the file by (size, mtime, ctime), so it costs a
    hash of the whole file only once; `rehash` ignores that record (`models pull` does).
    """
    if not path.is_file():
        raise DownloadError(
            f"The model {manifest.name} is not downloaded ({path} is missing).",
            fix=f"apus models pull {manifest.name}",
        )
    if not rehash and _cached_verdict(path) == manifest.sha256:
        return
    try:
        _check(path, manifest, label=str(path), quarantine=quarantine)
    except DownloadError:
        _verified_record(path).unlink(missing_ok=True)
        raise
    _write_verified(path, manifest.sha256)


def verified_download(part: HubFile, *, model: str, kind: str) -> Path:
    """A catalogue model's downloaded file, checked by size and sha256 (the hash once per file:
    `verify_model_file` remembers it). `model` is the catalogue name `apus models pull` takes,
    `kind` what the user calls it ("embedding model"); a missing or damaged file raises
    DownloadError with that command as the fix."""
    path = model_path(part)
    if not path.is_file():
        raise DownloadError(
            f"the {kind} {model} is not downloaded yet", fix=f"apus models pull {model}"
        )
    verify_model_file(path, part)
    return path


def installed_models(catalog: dict[str, ModelManifest] | None = None) -> list[InstalledModel]:
    """Catalogue models present on disk, with their (cached) verification result."""
    installed = []
    for manifest in (catalog if catalog is not None else load_catalog()).values():
        path = model_path(manifest)
        if not path.is_file():
            continue
        verified = _cached_verdict(path) == manifest.sha256
        if not verified:
            try:
                verify_model_file(path, manifest, quarantine=False)
                verified = True
            except DownloadError:
                verified = False
        installed.append(InstalledModel(manifest=manifest, path=path, verified=verified))
    return installed


def _transfer(
    manifest: HubFile,
    part: Path,
    *,
    progress: Progress | None,
    cancel: threading.Event | None,
    retries: int,
) -> None:
    # httpx is imported by a download, not by every command that looks for the model file.
    import httpx

    url = download_url(manifest)
    headers = {"User-Agent": f"apus/{__version__}", "Accept-Encoding": "identity"}
    # Short connect timeout: an unreachable hub should say so at once, not after a minute.
    timeout = httpx.Timeout(connect=5.0, read=30.0, write=30.0, pool=5.0)
    attempt = 0
    with httpx.Client(timeout=timeout, follow_redirects=True, headers=headers) as client:
        while True:
            offset = part.stat().st_size if part.exists() else 0
            if offset > manifest.size:
                part.unlink()
                offset = 0
            if offset == manifest.size:
                return
            try:
                _stream(client, url, manifest, part, offset, progress=progress, cancel=cancel)
                return
            except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
                # Refused or unroutable before any byte moved in this call: the hub is not
                # reachable from here, and retrying would only make the user wait.
                if attempt == 0 or attempt >= retries:
                    raise _offline_error(manifest, exc) from exc
            except (httpx.ReadError, httpx.ReadTimeout, httpx.RemoteProtocolError) as exc:
                if attempt >= retries:
                    raise DownloadError(
                        f"The download of {manifest.file} kept breaking off ({_describe(exc)}); "
                        f"{_size_text(part)} are saved and the next pull continues from there.",
                        fix=f"apus models pull {manifest.name}",
                    ) from exc
            attempt += 1
            time.sleep(_RETRY_PAUSE_S * attempt)


def _stream(
    client: httpx.Client,
    url: str,
    manifest: HubFile,
    part: Path,
    offset: int,
    *,
    progress: Progress | None,
    cancel: threading.Event | None,
) -> None:
    import httpx

    request_headers = {"Range": f"bytes={offset}-"} if offset else {}
    with client.stream("GET", url, headers=request_headers) as response:
        if response.status_code == 416:
            # The server says our partial file is not a prefix it can continue: start over.
            part.unlink(missing_ok=True)
            raise httpx.RemoteProtocolError("range not satisfiable", request=response.request)
        _raise_for_status(response, manifest)
        if offset and response.status_code == 200:
            offset = 0  # the server ignored the Range header and sent the whole file
        mode = "ab" if offset else "wb"
        done = offset
        with part.open(mode) as handle:
            # Network-sized chunks: every byte received is on disk before a connection drops.
            for chunk in response.iter_bytes():
                if cancel is not None and cancel.is_set():
                    raise DownloadCancelled(
                        f"Download of {manifest.name} cancelled; {_size_text(part)} kept.",
                        fix=f"apus models pull {manifest.name}  (continues where it stopped)",
                    )
                handle.write(chunk)
                done += len(chunk)
                if done > manifest.size:
                    break  # more bytes than the manifest allows: verification will refuse it
                if progress:
                    progress(done, manifest.size)
            handle.flush()
            os.fsync(handle.fileno())


def _raise_for_status(response: httpx.Response, manifest: HubFile) -> None:
    status = response.status_code
    if status in (200, 206):
        return
    where = f"{manifest.repo} at revision {manifest.revision[:12]}"
    if status in (401, 403):
        message = f"The model hub refused access to {manifest.file} in {where} (HTTP {status})."
        fix = "check the repository is public, or set HF_ENDPOINT to a mirror that has it"
    elif status == 404:
        message = f"The model hub has no {manifest.file} in {where} (HTTP 404)."
        fix = "check HF_ENDPOINT points at the Hugging Face hub or a full mirror of it"
    else:
        message = f"The model hub answered HTTP {status} for {manifest.file}."
        fix = f"try again later: apus models pull {manifest.name}"
    raise DownloadError(message, fix=fix)


def _check(path: Path, manifest: HubFile, *, label: str, quarantine: bool = True) -> None:
    problem = None
    size = path.stat().st_size
    if size != manifest.size:
        problem = f"it has {size} bytes, expected {manifest.size}"
    else:
        with path.open("rb") as handle:
            magic = handle.read(4)
        if manifest.file.endswith(".gguf") and magic != GGUF_MAGIC:
            problem = "it does not start with the GGUF magic bytes"
        else:
            digest = file_sha256(path)
            if digest != manifest.sha256:
                problem = f"its sha256 is {digest}, expected {manifest.sha256}"
    if problem is None:
        return
    message = f"The model {manifest.name} failed verification: {label}: {problem}."
    if quarantine:
        moved = _quarantine(path)
        message += f" It was moved to {moved}."
    raise DownloadError(message, fix=f"apus models pull {manifest.name}  (downloads it again)")


def _quarantine(path: Path) -> Path:
    folder = quarantine_dir()
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / f"{path.name}.{time.strftime('%Y%m%dT%H%M%S')}"
    counter = 1
    while target.exists():
        target = folder / f"{path.name}.{time.strftime('%Y%m%dT%H%M%S')}.{counter}"
        counter += 1
    os.replace(path, target)
    return target


def _verified_record(path: Path) -> Path:
    return path.with_name(path.name + _VERIFIED_SUFFIX)


def _cached_verdict(path: Path) -> str | None:
    """The sha256 recorded for this exact file (same size, mtime and ctime), if any.

    Size and mtime alone can be put back after the bytes change (`touch -d`, `cp -p`); the
    ctime cannot, and any write, rename or utime moves it, so a verdict recorded before the
    file's current ctime is never trusted.
    """
    try:
        record = json.loads(_verified_record(path).read_text(encoding="utf-8"))
        stat = path.stat()
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict):
        return None
    same = (record.get("size"), record.get("mtime_ns"), record.get("ctime_ns")) == (
        stat.st_size,
        stat.st_mtime_ns,
        stat.st_ctime_ns,
    )
    sha = record.get("sha256")
    return sha if same and isinstance(sha, str) else None


def _write_verified(path: Path, sha256: str) -> None:
    stat = path.stat()
    record = {
        "size": stat.st_size,
        "mtime_ns": stat.st_mtime_ns,
        "ctime_ns": stat.st_ctime_ns,
        "sha256": sha256,
    }
    target = _verified_record(path)
    tmp = target.with_name(target.name + ".tmp")
    with contextlib.suppress(OSError):  # a read-only folder only costs a re-hash next time
        tmp.write_text(json.dumps(record), encoding="utf-8")
        os.replace(tmp, target)


@contextlib.contextmanager
def _locked(final: Path, cancel: threading.Event | None) -> Iterator[None]:
    """One download per model file at a time, across processes; waiting stays cancellable."""
    # Imported here: resolving a downloaded model (every search with embeddings on) never
    # downloads, and filelock costs 10 ms of a one-shot command.
    from filelock import FileLock, Timeout

    lock = FileLock(str(final.with_name(final.name + ".lock")))
    while True:
        if cancel is not None and cancel.is_set():
            raise DownloadCancelled("Download cancelled while waiting for another download.")
        try:
            lock.acquire(timeout=0.5)
            break
        except Timeout:
            continue
    try:
        yield
    finally:
        lock.release()


def _offline_error(manifest: HubFile, exc: Exception) -> DownloadError:
    own = (
        "memory.search.local.modelPath to a GGUF file"
        if manifest.file.endswith(".gguf")
        else "memory.search.rerank.local.modelPath to an ONNX file"
    )
    return DownloadError(
        f"Cannot reach the model hub at {hub_endpoint()} to download {manifest.name} "
        f"({_describe(exc)}); you may be offline.",
        fix=(
            f"connect and run `apus models pull {manifest.name}`, set HF_ENDPOINT to a reachable "
            f"mirror, or set {own} you already have"
        ),
    )


def _describe(exc: Exception) -> str:
    # A refused or reset connection is named by Python's own class for it ("connection
    # refused"), not the platform's errno text ("[Errno 111] ..." on Linux, 61 on macOS).
    text = _connection_failure(exc) or str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _connection_failure(exc: BaseException) -> str:
    """'connection refused' and the like, from an OSError subclass behind `exc`, else ''."""
    seen: BaseException | None = exc
    for _ in range(8):  # the chain httpx -> httpcore -> the socket's error is short
        if seen is None:
            return ""
        if isinstance(seen, ConnectionError) and type(seen) is not ConnectionError:
            words = re.sub(r"(?<!^)(?=[A-Z])", " ", type(seen).__name__.removesuffix("Error"))
            return words.lower()
        seen = seen.__cause__ or seen.__context__
    return ""


def _size_text(part: Path) -> str:
    return human_size(part.stat().st_size if part.exists() else 0)
