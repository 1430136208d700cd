"""A directory as the store: the embedded default, which needs no server."""

from __future__ import annotations

import contextlib
import os
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator

from pvbench.store.base import StoredObject, StoreError, _bytes_or_error

# Threads that walk a local store's folders at once, once a folder's walk had to read the disk
# (more than DISK_READ_BLOCKS blocks of 512 bytes: a cold folder of 1,000 results reads 10,000s,
# a cached one now and then a few dozen; see LocalStore.list_objects).
LIST_THREADS = 4
DISK_READ_BLOCKS = 1024


@dataclass
class LocalStore:
    root: Path

    def __post_init__(self) -> None:  # a str root too (scripts): keys are joined to it with /
        self.root = Path(self.root)

    @property
    def url(self) -> str:
        return str(self.root)

    def _path(self, key: str) -> Path:
        return self.root / key

    def put_bytes(self, key: str, data: bytes, content_type: str = "application/json") -> None:
        path = self._path(key)
        # Write-then-rename: a reader never sees half a result, a rerun of the same
        # cell replaces it atomically (idempotent by key). A failed write (full disk,
        # read-only, permissions) leaves neither the temporary file nor a partial result,
        # and raises one StoreError naming the file.
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp.write_bytes(data)
            tmp.replace(path)
        except OSError as exc:
            try:
                tmp.unlink(missing_ok=True)
            except OSError:
                pass
            raise StoreError(f"cannot write {path}: {exc.strerror or exc}") from exc

    def put_many(self, items: Iterable[tuple[str, bytes, str]]) -> None:
        failed: StoreError | None = None
        for key, data, content_type in items:
            try:
                self.put_bytes(key, data, content_type)
            except StoreError as exc:
                failed = failed or exc
        if failed is not None:
            raise failed

    def get_bytes(self, key: str) -> bytes:
        # a string join, not self._path: a Path built per document, 100,000 times a campaign
        return _read_file(os.path.join(self.root, key))

    def get_many(self, keys: Iterable[str]) -> Iterator[tuple[str, bytes | Exception]]:
        return ((key, _bytes_or_error(self, key)) for key in keys)

    def exists(self, key: str) -> bool:
        return self._path(key).is_file()

    def delete(self, key: str) -> None:
        """Remove the file, then its folders up to the store's root while they are empty (an S3
        prefix has no folders to leave behind; a local store would keep one per removed snapshot
        generation)."""
        path = self._path(key)
        try:
            path.unlink(missing_ok=True)
        except OSError as exc:
            raise StoreError(f"cannot remove {path}: {exc.strerror or exc}") from exc
        for folder in path.parents:
            if folder == self.root or self.root not in folder.parents:
                break
            try:
                folder.rmdir()
            except OSError:  # not empty (or gone): the folders above are not either
                break

    def list_keys(self, prefix: str) -> Iterator[str]:
        return (obj.key for obj in self.list_objects(prefix))

    def list_objects(self, prefix: str) -> Iterator[StoredObject]:
        """Every file under the prefix, in key order (a folder's files, then its subfolders').

        The folders of a campaign's runs are walked one after the other in this thread while their
        directories are in the page cache; once a walk had to read the disk (this thread's block
        reads, getrusage; where that is not known, always), the rest are walked in LIST_THREADS
        threads, as reading a directory and a stat release the GIL. Cached, threads only contend
        for the GIL; cold, they overlap the disk's waits (pvbench_lab.bench_listing prints both).
        Each run's subtree is a list; the whole listing is never held at once beyond the runs
        walked ahead."""
        base = self._path(prefix)
        if not base.is_dir():
            if base.is_file():
                st = base.stat()
                yield StoredObject(prefix, st.st_size, str(st.st_mtime_ns))
            return
        folder = str(base)
        while True:  # down the single-child folders (results/ → campaign=…) to where the tree fans out
            files, folders = self._scan(folder)
            yield from files
            if len(folders) != 1:
                break
            folder = folders[0]
        if len(folders) <= 1:
            return
        rest = iter(folders)
        for folder in rest:
            before = _disk_reads()
            objects = self._walk(folder)
            after = _disk_reads()
            yield from objects
            if before is None or after is None or after - before > DISK_READ_BLOCKS:
                break
        else:
            return
        with ThreadPoolExecutor(LIST_THREADS) as pool:
            for objects in pool.map(self._walk, rest):
                yield from objects

    def _scan(self, folder: str) -> tuple[list[StoredObject], list[str]]:
        """(the folder's files with their size and version, its subfolders), each in name order."""
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except FileNotFoundError:
            return [], []
        root = len(str(self.root)) + 1
        files, folders = [], []
        for entry in entries:
            if entry.name.startswith("."):
                continue
            if entry.is_dir(follow_symlinks=False):
                folders.append(entry.path)
            elif entry.is_file():
                st = entry.stat()
                files.append(StoredObject(entry.path[root:].replace(os.sep, "/"), st.st_size, str(st.st_mtime_ns)))
        return files, folders

    def _walk(self, folder: str) -> list[StoredObject]:
        """Everything under one folder, in key order (depth first)."""
        out: list[StoredObject] = []
        stack = [folder]
        while stack:
            files, folders = self._scan(stack.pop())
            out.extend(files)
            stack.extend(reversed(folders))
        return out

    def duckdb_path(self, key_or_glob: str) -> str:
        return str(self.root / key_or_glob)

    def check(self) -> None:
        """Before anything runs: the directory exists (or can be made) and takes a file."""
        if self.root.exists() and not self.root.is_dir():
            raise StoreError(f"store {self.root} is not a directory")
        probe = f"results/.pvbench-check.{os.getpid()}"  # where results go: the directory results/ must take files
        made = [d for d in [self.root / "results", *(self.root / "results").parents] if not d.exists()]
        try:
            self.put_bytes(probe, b"ok")
        except StoreError as exc:
            raise StoreError(f"store {self.root} is not writable: {exc}") from exc
        finally:  # leave no trace: the probe goes, and so do the directories made for it
            with contextlib.suppress(OSError):
                (self.root / probe).unlink(missing_ok=True)
            for directory in made:
                with contextlib.suppress(OSError):
                    directory.rmdir()


def _read_file(path: str) -> bytes:
    """The whole file: os.read until it returns nothing (a file is read to its end even if it
    grew since it was listed). Not Path.read_bytes: its buffered file object makes 7 system calls
    a file (fstat twice, ioctl, lseek) where open, read to the end and close are 4, and a
    compaction reads every document of a campaign."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    try:
        chunks = []
        while chunk := os.read(fd, READ_CHUNK):
            chunks.append(chunk)
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)
    finally:
        os.close(fd)


# os.read's buffer: a result document is ~2 KB, so one read and the one that finds the end
READ_CHUNK = 64 * 1024


def _disk_reads() -> int | None:
    """Blocks this thread has read from storage (not from the page cache), where the OS says."""
    try:
        import resource

        return resource.getrusage(resource.RUSAGE_THREAD).ru_inblock
    except (ImportError, AttributeError, ValueError, OSError):  # no RUSAGE_THREAD (not Linux)
        return None
