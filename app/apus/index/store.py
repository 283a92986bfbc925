"""The SQLite store: files, chunks, skipped files, embedding cache and meta, in WAL mode.

Its connection translates SQLite's errors (`apus.index.sqlite`) and is brought to the current
schema when a writer opens it (`apus.index.schema`). The transcripts kept in the same
database are read and written by `apus.index.transcript_store` on that connection; a damaged
database is set aside by `apus.index.set_aside`, and a forced rebuild's copies between
databases are `apus.index.shadow_store`'s.
"""

from __future__ import annotations

import dataclasses
import json
import sqlite3
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from apus.errors import ApusError, IndexCorruptError, Problem
from apus.index import file_names
from apus.index.note_filter import NoteFilter
from apus.index.schema import migrate, schema_version
from apus.index.sqlite import (
    REBUILD_FIX,
    Connection,
    IndexWriteError,
    connect,
)

if TYPE_CHECKING:  # the writers hand chunks in; a search never imports the chunker
    import numpy as np

    from apus.vault.chunk import Chunk

# numpy is imported by the methods that use it: Claude Code's hook reads trusted entries from
# the store in a process of its own, where numpy's import would be a third of the answer.

# Values bound per `IN (...)` query: well under SQLite's default limit of 999 parameters.
_IN_BATCH = 500
_EMBED_FAILURE_KEY = "embed.failure"  # why the last sync's embedding stopped short
# The highest chunk id ever given: ids are never given twice (`Store._next_chunk_id`).
HIGHEST_CHUNK_KEY = "chunks.highest_id"


@dataclass(frozen=True)
class FileRecord:
    id: int
    path: str
    size: int
    mtime_ns: int
    sha256: str
    title: str
    note_date: str | None
    importance: float | None
    triggers: tuple[str, ...]
    chunking: str


@dataclass(frozen=True)
class ChunkRecord:
    id: int
    file_id: int
    path: str
    title: str
    ordinal: int
    start_line: int
    end_line: int
    heading: str
    text: str
    tokens: int
    note_date: str | None
    importance: float | None
    source: str = "memory"


@dataclass(frozen=True)
class ChunkFacts:
    """What ranking weighs a chunk by, read for each of a search's hundreds of candidates
    (of which it shows ten, whose records are read then): its note, the note's path, date
    and importance, and the text of a chunk holding an annotation (`<!--`), whose importance
    ranking reads; None for every other chunk."""

    id: int
    file_id: int
    path: str
    note_date: str | None
    importance: float | None
    annotated: str | None
    lang: str | None = None  # its note's language, when known


@dataclass(frozen=True)
class NewFile:
    """A note ready to be written: its metadata and chunks."""

    path: str
    size: int
    mtime_ns: int
    sha256: str
    title: str
    note_date: str | None
    importance: float | None
    triggers: tuple[str, ...]
    chunking: str
    replaced_utf8: bool
    chunks: Iterable[Chunk]  # may be made while add_file writes them (iterated once)
    tags: tuple[str, ...] = ()  # folded
    dated: str | None = None  # ISO day search filters by
    source: str = "memory"
    lang: str | None = None  # the language of its prose, when clear (apus.vault.language)


class Store:
    """Owns one vault's SQLite database. Not shared between threads: open one per thread."""

    FILENAME = "apus.sqlite"

    def __init__(self, index_dir: Path, *, readonly: bool = False) -> None:
        self.path = index_dir / self.FILENAME
        self.readonly = readonly
        if not readonly:
            try:
                index_dir.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise _folder_error(index_dir, exc) from exc
        try:
            self._db = connect(self.path, readonly=readonly)
            self._db.execute("PRAGMA busy_timeout = 10000")
            if not readonly:
                self._db.execute("PRAGMA journal_mode = WAL")
                self._db.execute("PRAGMA synchronous = NORMAL")
            self._db.execute("PRAGMA foreign_keys = ON")
            if not readonly:
                file_names.register(self._db)
                migrate(self._db, self.path)
                # Names this database: vectors.faiss records it, so a store rebuilt after
                # damage (whose chunk ids start again from 1) never inherits old vectors.
                with self._db:
                    self._db.execute(
                        "INSERT OR IGNORE INTO meta(key, value) "
                        "VALUES ('store_id', lower(hex(randomblob(16))))"
                    )
        except sqlite3.DatabaseError as exc:  # what the cursors leave as it is (a lock)
            raise IndexCorruptError(
                f"The index database {self.path} cannot be read ({exc}).", fix=REBUILD_FIX
            ) from exc

    @classmethod
    def exists(cls, index_dir: Path) -> bool:
        """True once a database with a schema is there: one being created does not count yet."""
        path = index_dir / cls.FILENAME
        if not path.is_file():
            return False
        try:
            db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        except sqlite3.Error:
            return True  # there but unreadable: opening it gives the error with its fix
        try:
            db.execute("PRAGMA busy_timeout = 10000")
            return int(db.execute("PRAGMA user_version").fetchone()[0]) > 0
        except sqlite3.Error:
            return True
        finally:
            db.close()

    def close(self) -> None:
        self._db.close()

    @property
    def connection(self) -> Connection:
        """The store's connection, for the records kept in modules of their own (transcripts):
        their writes join this store's transactions."""
        return self._db

    def has_transcripts(self) -> bool:
        """Whether the schema holds transcripts (a store not yet upgraded by a sync does not)."""
        return schema_version(self._db) >= 3

    def store_id(self) -> str:
        """A random name given to this database when it was created ("" if older)."""
        return self.get_meta("store_id", "") or ""

    @contextmanager
    def transaction(self) -> Iterator[None]:
        with self._db:
            yield

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """Reads that see one committed state: a writer committing between two of them is
        seen by both or by neither (outside a transaction each statement sees the latest)."""
        if self._db.in_transaction:
            yield
            return
        self._db.execute("BEGIN")
        try:
            yield
        finally:
            self._db.execute("COMMIT")

    @contextmanager
    def savepoint(self) -> Iterator[None]:
        """Inside `transaction()`: a part that is undone alone when it raises, so one note
        the database refuses does not undo the batch it is written with."""
        if not self._db.in_transaction:
            # SAVEPOINT outside a transaction would start one that RELEASE commits.
            self._db.execute("BEGIN")
        self._db.execute("SAVEPOINT part")
        try:
            yield
        except BaseException:
            self._db.execute("ROLLBACK TO part")
            self._db.execute("RELEASE part")
            raise
        self._db.execute("RELEASE part")

    # -- meta ---------------------------------------------------------------------------

    def get_meta(self, key: str, default: str | None = None) -> str | None:
        row = self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else default

    def set_meta(self, key: str, value: str) -> None:
        self._db.execute(
            "INSERT INTO meta(key, value) VALUES(?, ?) "
            "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (key, value),
        )

    def record_embed_failure(self, failure: Problem | None) -> None:
        """Why an embedding step stopped short, or None once one completes: every process's
        search and status say "stopped" instead of "being built" from it."""
        value = "" if failure is None else json.dumps(dataclasses.asdict(failure))
        if value or self.get_meta(_EMBED_FAILURE_KEY):
            self.set_meta(_EMBED_FAILURE_KEY, value)

    def embed_failure(self) -> Problem | None:
        raw = self.get_meta(_EMBED_FAILURE_KEY)
        if not raw:
            return None
        try:
            data = json.loads(raw)
            return Problem(str(data["reason"]), str(data.get("fix", "")))
        except (ValueError, KeyError, TypeError):
            return None

    def data_version(self) -> int:
        """Changes whenever another connection commits: a cheap "has anything changed?"."""
        return int(self._db.execute("PRAGMA data_version").fetchone()[0])

    def generation(self) -> int:
        return int(self.get_meta("generation", "0") or 0)

    def bump_generation(self) -> int:
        new = self.generation() + 1
        self.set_meta("generation", str(new))
        return new

    # -- files and chunks ---------------------------------------------------------------

    _FILE_SELECT = (
        "SELECT id, path, size, mtime_ns, sha256, title, note_date, importance, triggers, "
        "chunking FROM files"
    )

    def files(self, source: str | None = None) -> dict[str, FileRecord]:
        """Every indexed file by path, or those of one source ("memory": the notes)."""
        rows = (
            self._db.execute(self._FILE_SELECT)
            if source is None
            else self._db.execute(self._FILE_SELECT + " WHERE source = ?", (source,))
        )
        return {row[1]: _file_record(row) for row in rows}

    def file_paths(self) -> list[tuple[int, str]]:
        """Every indexed file's id and path."""
        # fetchall: one call for every row, not one through the cursor each.
        return [
            (int(i), path) for i, path in self._db.execute("SELECT id, path FROM files").fetchall()
        ]

    def file_facts(self) -> list[tuple[int, str | None, float | None]]:
        """Id, note date and importance of every file that has a date or an importance (what
        ranking weighs a note by; every other note is weighed alike)."""
        return self._db.execute(
            "SELECT id, note_date, importance FROM files "
            "WHERE note_date IS NOT NULL OR importance IS NOT NULL"
        ).fetchall()

    def file_languages(self) -> dict[int, str]:
        """The language of every note whose language is known, by file id (none in a store
        no sync has upgraded yet: a reader never migrates)."""
        if not self._knows_languages():
            return {}
        rows = self._db.execute("SELECT id, lang FROM files WHERE lang IS NOT NULL")
        return {int(file_id): str(lang) for file_id, lang in rows}

    def _knows_languages(self) -> bool:
        """Whether the schema holds each note's language (version 5 on)."""
        return schema_version(self._db) >= 5

    def file_by_path(self, path: str) -> FileRecord | None:
        row = self._db.execute(self._FILE_SELECT + " WHERE path = ?", (path,)).fetchone()
        return _file_record(row) if row else None

    def add_file(
        self, new: NewFile, reuse_ids: Sequence[int | None] | None = None
    ) -> tuple[int, list[int]]:
        """Insert (or replace) a file and its chunks; returns file id and chunk ids.

        `reuse_ids` gives chunks the id they already have in the live store a forced rebuild
        replaces (None: a fresh id); only ids of the same text may be passed.
        """
        self._db.execute("DELETE FROM files WHERE path = ?", (new.path,))
        cursor = self._db.execute(
            "INSERT INTO files(path, size, mtime_ns, sha256, title, note_date, importance, "
            "triggers, chunking, replaced_utf8, indexed_at, tags, dated, source, lang) "
            "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                new.path,
                new.size,
                new.mtime_ns,
                new.sha256,
                new.title,
                new.note_date,
                new.importance,
                json.dumps(list(new.triggers), ensure_ascii=False),
                new.chunking,
                int(new.replaced_utf8),
                time.time(),
                json.dumps(list(new.tags), ensure_ascii=False),
                new.dated,
                new.source,
                new.lang,
            ),
        )
        file_id = int(cursor.lastrowid or 0)
        file_names.write(self._db, file_id, new.path)  # the old row's names went with it
        return file_id, self.insert_chunks(file_id, new.chunks, reuse_ids)

    def insert_chunks(
        self,
        file_id: int,
        chunks: Iterable[Chunk],
        reuse_ids: Sequence[int | None] | None = None,
    ) -> list[int]:
        """Insert a file's chunks (iterated once, so they may be made while written); returns
        their ids: `reuse_ids`' where given (see `add_file`), else ids never given before."""
        chunk_ids: list[int] = []
        next_id = self._next_chunk_id()
        fresh = 0
        for index, chunk in enumerate(chunks):
            chunk_id = reuse_ids[index] if reuse_ids is not None else None
            if chunk_id is None:
                chunk_id = next_id + fresh
                fresh += 1
            cur = self._db.execute(
                "INSERT INTO chunks(id, file_id, ordinal, start_line, end_line, heading, text, "
                "tokens) VALUES (?,?,?,?,?,?,?,?)",
                (
                    chunk_id,
                    file_id,
                    chunk.ordinal,
                    chunk.start_line,
                    chunk.end_line,
                    " > ".join(chunk.heading_path),
                    chunk.text,
                    chunk.tokens,
                ),
            )
            chunk_ids.append(int(cur.lastrowid or 0))
        if fresh:
            self.set_meta(HIGHEST_CHUNK_KEY, str(next_id + fresh - 1))
        return chunk_ids

    def _next_chunk_id(self) -> int:
        """Chunk ids are never given twice: SQLite would hand out the ids of the highest
        rows again once they are deleted (edit the newest note), and vectors.faiss, which
        keeps vectors by chunk id, would then answer with the old text's vector."""
        highest = self._db.execute("SELECT MAX(id) FROM chunks").fetchone()[0] or 0
        given = int(self.get_meta(HIGHEST_CHUNK_KEY, "0") or 0)
        return max(int(highest), given) + 1

    def delete_files(self, file_ids: Iterable[int]) -> None:
        self._db.executemany("DELETE FROM files WHERE id = ?", [(i,) for i in file_ids])

    def rename_file(
        self,
        file_id: int,
        new_path: str,
        size: int,
        mtime_ns: int,
        *,
        title: str,
        note_date: str | None,
        dated: str | None,
    ) -> None:
        """Move a file's record (its chunks stay); title and dates may come from the name."""
        self._db.execute(
            "UPDATE files SET path = ?, size = ?, mtime_ns = ?, title = ?, note_date = ?, "
            "dated = ? WHERE id = ?",
            (new_path, size, mtime_ns, title, note_date, dated, file_id),
        )
        file_names.forget(self._db, file_id)
        file_names.write(self._db, file_id, new_path)

    def touch_file(self, file_id: int, size: int, mtime_ns: int) -> None:
        self._db.execute(
            "UPDATE files SET size = ?, mtime_ns = ? WHERE id = ?", (size, mtime_ns, file_id)
        )

    def _rows_in(
        self, query: str, values: Sequence[object], leading: Sequence[object] = ()
    ) -> Iterator[tuple[Any, ...]]:
        """Rows of `query` (with `{marks}` in its IN list, after `leading` parameters) for any
        number of values, in batches under SQLite's limit on bound parameters."""
        values = list(values)
        for start in range(0, len(values), _IN_BATCH):
            part = values[start : start + _IN_BATCH]
            marks = ",".join("?" * len(part))
            # fetchall: one call for the batch's rows, not one through the cursor each.
            yield from self._db.execute(query.format(marks=marks), [*leading, *part]).fetchall()

    def chunk_ids_of_files(self, file_ids: Sequence[int]) -> list[int]:
        query = "SELECT id FROM chunks WHERE file_id IN ({marks})"
        return [row[0] for row in self._rows_in(query, file_ids)]

    def chunk_files(self) -> tuple[np.ndarray, np.ndarray]:
        """Every chunk's id, ascending, and its file's id (int64 arrays). SQLite joins each
        column into one string, which numpy reads back: 21 ms at 118k chunks, against 78 ms
        for a row per chunk."""
        import numpy as np

        ids_text, files_text = self._db.execute(
            "SELECT group_concat(id), group_concat(file_id) FROM chunks"
        ).fetchone()
        ids = _int_list(ids_text)
        files = _int_list(files_text)
        order = np.argsort(ids, kind="stable")
        return ids[order], files[order]

    def annotated_chunks(self) -> dict[int, str]:
        """The texts of the chunks that hold an annotation (`<!--`), by chunk id: a scan of
        every text (LIKE matches a fixed string about 3x sooner than instr, which counts
        characters as it goes: 28 vs 92 ms over 118k chunks)."""
        rows = self._db.execute("SELECT id, text FROM chunks WHERE text LIKE '%<!--%'")
        return {int(row[0]): str(row[1]) for row in rows.fetchall()}

    _FACTS_SELECT = (
        "SELECT c.id, c.file_id, f.path, f.note_date, f.importance, "
        "CASE WHEN c.text LIKE '%<!--%' THEN c.text END, {lang} "
        "FROM chunks c JOIN files f ON f.id = c.file_id WHERE c.id IN ({{marks}})"
    )

    def chunk_facts(self, chunk_ids: Sequence[int]) -> list[ChunkFacts]:
        """What ranking weighs each of these chunks by, without their texts (SQLite looks
        for an annotation in each: only an annotated chunk's text comes back); a chunk no
        longer stored is left out."""
        query = self._FACTS_SELECT.format(lang="f.lang" if self._knows_languages() else "NULL")
        return [ChunkFacts(*row) for row in self._rows_in(query, chunk_ids)]

    def chunk_files_of(self, chunk_ids: Sequence[int]) -> dict[int, int]:
        """The file id of each of these chunks that is still stored."""
        query = "SELECT id, file_id FROM chunks WHERE id IN ({marks})"
        return {int(row[0]): int(row[1]) for row in self._rows_in(query, chunk_ids)}

    _CHUNK_SELECT = (
        "SELECT c.id, c.file_id, f.path, f.title, c.ordinal, c.start_line, c.end_line, "
        "c.heading, c.text, c.tokens, f.note_date, f.importance, f.source "
        "FROM chunks c JOIN files f ON f.id = c.file_id"
    )

    def chunks_by_id(self, chunk_ids: Sequence[int]) -> dict[int, ChunkRecord]:
        query = self._CHUNK_SELECT + " WHERE c.id IN ({marks})"
        return {row[0]: ChunkRecord(*row) for row in self._rows_in(query, chunk_ids)}

    def iter_chunks(self, file_ids: Sequence[int] | None = None) -> Iterator[ChunkRecord]:
        rows: Iterable[tuple[Any, ...]]
        if file_ids is None:
            rows = self._db.execute(f"{self._CHUNK_SELECT} ORDER BY c.id")
        else:
            query = self._CHUNK_SELECT + " WHERE c.file_id IN ({marks}) ORDER BY c.id"
            rows = self._rows_in(query, file_ids)
        for row in rows:
            yield ChunkRecord(*row)

    def first_chunk_of_files(self, file_ids: Sequence[int]) -> dict[int, ChunkRecord]:
        query = self._CHUNK_SELECT + " WHERE c.file_id IN ({marks}) AND c.ordinal = 0"
        records = (ChunkRecord(*row) for row in self._rows_in(query, file_ids))
        return {record.file_id: record for record in records}

    def files_named(self, key: str) -> list[int]:
        """Ids of the files whose folded path, file name or stem is `key` (see
        `apus.index.file_names`): one indexed lookup."""
        if schema_version(self._db) >= 4:
            return file_names.files_named(self._db, key)
        # A store no sync has upgraded yet (a reader never migrates): fold every path.
        rows = self._db.execute("SELECT id, path FROM files ORDER BY id")
        return [int(row[0]) for row in rows if key in file_names.name_keys(str(row[1]))]

    def holds_other_sources(self, sources: Sequence[str]) -> bool:
        """Whether any indexed file comes from a source not in `sources`."""
        marks = ",".join("?" * len(sources)) or "NULL"
        row = self._db.execute(
            f"SELECT 1 FROM files WHERE source NOT IN ({marks}) LIMIT 1", list(sources)
        ).fetchone()
        return row is not None

    def file_ids_matching(self, note_filter: NoteFilter) -> set[int]:
        if "sessions" in note_filter.sources and not self.has_transcripts():
            # Not upgraded by a sync yet: no transcripts, and no table to scope them by.
            kept = tuple(source for source in note_filter.sources if source != "sessions")
            note_filter = dataclasses.replace(note_filter, sources=kept)
        where, params = note_filter.where()
        rows = self._db.execute(f"SELECT id FROM files WHERE {where}", params)
        return {int(row[0]) for row in rows}

    def counts(self) -> tuple[int, int]:
        files = self._db.execute("SELECT COUNT(*) FROM files").fetchone()[0]
        chunks = self._db.execute("SELECT COUNT(*) FROM chunks").fetchone()[0]
        return int(files), int(chunks)

    # -- skipped files ------------------------------------------------------------------

    def replace_skipped(self, skipped: Iterable[tuple[str, str]]) -> None:
        self._db.execute("DELETE FROM skipped")
        self.add_skipped(skipped)

    def add_skipped(self, skipped: Iterable[tuple[str, str]]) -> None:
        self._db.executemany("INSERT OR REPLACE INTO skipped(path, reason) VALUES (?, ?)", skipped)

    def skipped(self) -> list[tuple[str, str]]:
        rows = self._db.execute("SELECT path, reason FROM skipped ORDER BY path")
        return [(str(path), str(reason)) for path, reason in rows]

    def files_with_replaced_utf8(self) -> list[str]:
        rows = self._db.execute("SELECT path FROM files WHERE replaced_utf8 = 1 ORDER BY path")
        return [str(row[0]) for row in rows]

    # -- embeddings ---------------------------------------------------------------------

    def cached_vectors(self, keys: Sequence[str]) -> dict[str, np.ndarray]:
        import numpy as np

        query = "SELECT key, dims, vector FROM embedding_cache WHERE key IN ({marks})"
        return {
            key: np.frombuffer(blob, dtype=np.float32, count=dims)
            for key, dims, blob in self._rows_in(query, keys)
        }

    def put_vectors(self, items: Iterable[tuple[str, np.ndarray]]) -> None:
        import numpy as np

        now = time.time()
        self._db.executemany(
            "INSERT OR REPLACE INTO embedding_cache(key, dims, vector, created) VALUES (?,?,?,?)",
            [
                (key, int(vec.shape[0]), np.ascontiguousarray(vec, np.float32).tobytes(), now)
                for key, vec in items
            ],
        )

    def set_chunk_vectors(self, rows: Iterable[tuple[int, str, str]]) -> None:
        self._db.executemany(
            "INSERT OR REPLACE INTO chunk_vectors(chunk_id, identity, cache_key) VALUES (?,?,?)",
            rows,
        )

    def forget_vectors(self, identity_key: str) -> None:
        """Drop every cached vector and chunk link of one identity (a forced re-embed)."""
        self._db.execute("DELETE FROM chunk_vectors WHERE identity = ?", (identity_key,))
        self._db.execute(
            "DELETE FROM embedding_cache WHERE key >= ? AND key < ?",
            (f"{identity_key}:", f"{identity_key};"),
        )

    def chunks_missing_vectors(self, identity_key: str) -> list[int]:
        rows = self._db.execute(
            "SELECT c.id FROM chunks c LEFT JOIN chunk_vectors v "
            "ON v.chunk_id = c.id AND v.identity = ? WHERE v.chunk_id IS NULL ORDER BY c.id",
            (identity_key,),
        )
        return [row[0] for row in rows]

    def paths_missing_vectors(self, identity_key: str) -> list[tuple[int, str]]:
        """(chunk id, file path) of every chunk without a vector for the identity, by id."""
        rows = self._db.execute(
            "SELECT c.id, f.path FROM chunks c JOIN files f ON f.id = c.file_id "
            "LEFT JOIN chunk_vectors v ON v.chunk_id = c.id AND v.identity = ? "
            "WHERE v.chunk_id IS NULL ORDER BY c.id",
            (identity_key,),
        )
        return [(row[0], row[1]) for row in rows]

    def vector_chunk_ids(self, identity_key: str) -> set[int]:
        rows = self._db.execute(
            "SELECT chunk_id FROM chunk_vectors WHERE identity = ?", (identity_key,)
        )
        return {row[0] for row in rows}

    def vectors_for_chunks(
        self, identity_key: str, chunk_ids: Sequence[int]
    ) -> Iterator[tuple[int, np.ndarray]]:
        import numpy as np

        query = (
            "SELECT v.chunk_id, e.dims, e.vector FROM chunk_vectors v "
            "JOIN embedding_cache e ON e.key = v.cache_key "
            "WHERE v.identity = ? AND v.chunk_id IN ({marks})"
        )
        for chunk_id, dims, blob in self._rows_in(query, chunk_ids, leading=(identity_key,)):
            yield chunk_id, np.frombuffer(blob, dtype=np.float32, count=dims)

    def vector_count(self, identity_key: str) -> int:
        row = self._db.execute(
            "SELECT COUNT(*) FROM chunk_vectors WHERE identity = ?", (identity_key,)
        ).fetchone()
        return int(row[0])

    def cache_size(self) -> int:
        return int(self._db.execute("SELECT COUNT(*) FROM embedding_cache").fetchone()[0])


def _file_record(row: Sequence[Any]) -> FileRecord:
    """The file of a `files` row, as sqlite3 returns it (its values untyped)."""
    return FileRecord(
        id=int(row[0]),
        path=str(row[1]),
        size=int(row[2]),
        mtime_ns=int(row[3]),
        sha256=str(row[4]),
        title=str(row[5]),
        note_date=row[6] if row[6] is None else str(row[6]),
        importance=None if row[7] is None else float(row[7]),
        # Most notes have none, and a sync's plan reads the record of every note: "[]" is not
        # parsed.
        triggers=() if row[8] == "[]" else tuple(json.loads(str(row[8]))),
        chunking=str(row[9]),
    )


def _int_list(text: str | None) -> np.ndarray:
    """Integers SQLite's group_concat joined with commas (None: no rows)."""
    import numpy as np

    return np.fromstring(text or "", dtype=np.int64, sep=",")


def _folder_error(index_dir: Path, exc: OSError) -> ApusError:
    if index_dir.exists() and not index_dir.is_dir():
        return IndexWriteError(
            f"The index folder {index_dir} is a file, not a folder.",
            "move that file elsewhere (Apus never deletes it), then run `apus memory index`",
        )
    return IndexWriteError(
        f"Cannot create the index folder {index_dir} ({exc.strerror or exc}).",
        "check that its parent folder is writable, or set memory.search.store.path",
    )
