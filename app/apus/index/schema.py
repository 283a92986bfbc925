"""The store's schema: the migration of each version, and a database brought to the current one.

A new database gets the whole schema in one transaction; an old one upgrades a step per
transaction. Each step is SQL that runs in order, so the list is only ever appended to.
"""

from __future__ import annotations

from pathlib import Path

from apus.errors import IndexCorruptError
from apus.index.sqlite import Connection

SCHEMA_VERSION = 5
# Each entry migrates from version N-1 to N; append, never edit, so old stores upgrade in order.
MIGRATIONS: tuple[str, ...] = (
    """
    CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    CREATE TABLE files (
        id INTEGER PRIMARY KEY,
        path TEXT NOT NULL UNIQUE,
        size INTEGER NOT NULL,
        mtime_ns INTEGER NOT NULL,
        sha256 TEXT NOT NULL,
        title TEXT NOT NULL,
        note_date TEXT,
        importance REAL,
        triggers TEXT NOT NULL DEFAULT '[]',
        chunking TEXT NOT NULL,
        replaced_utf8 INTEGER NOT NULL DEFAULT 0,
        indexed_at REAL NOT NULL
    );
    CREATE INDEX files_sha ON files(sha256);
    CREATE TABLE chunks (
        id INTEGER PRIMARY KEY,
        file_id INTEGER NOT NULL REFERENCES files(id) ON DELETE CASCADE,
        ordinal INTEGER NOT NULL,
        start_line INTEGER NOT NULL,
        end_line INTEGER NOT NULL,
        heading TEXT NOT NULL,
        text TEXT NOT NULL,
        tokens INTEGER NOT NULL
    );
    CREATE INDEX chunks_file ON chunks(file_id);
    CREATE TABLE skipped (path TEXT PRIMARY KEY, reason TEXT NOT NULL);
    -- files indexed with a caveat (e.g. invalid UTF-8 replaced) are in files.replaced_utf8
    CREATE TABLE embedding_cache (
        key TEXT PRIMARY KEY,
        dims INTEGER NOT NULL,
        vector BLOB NOT NULL,
        created REAL NOT NULL
    );
    CREATE TABLE chunk_vectors (
        chunk_id INTEGER PRIMARY KEY REFERENCES chunks(id) ON DELETE CASCADE,
        identity TEXT NOT NULL,
        cache_key TEXT NOT NULL
    );
    """,
    # 2: what search filters by. `dated` is the note's date for --since/--until (its file
    # name's, else its frontmatter's, else its modification day); `tags` are frontmatter tags,
    # folded; `source` is the corpus (memory notes, or agent transcripts when enabled).
    # Tags and dates come from each note's text, so every note is read again on the next
    # sync (its vectors come back from the cache: nothing is embedded twice).
    """
    ALTER TABLE files ADD COLUMN tags TEXT NOT NULL DEFAULT '[]';
    ALTER TABLE files ADD COLUMN dated TEXT;
    ALTER TABLE files ADD COLUMN source TEXT NOT NULL DEFAULT 'memory';
    CREATE INDEX files_dated ON files(dated);
    UPDATE files SET chunking = '';
    """,
    # 3: agent session transcripts (source 'sessions'). A transcript is a `files` row (its
    # chunks are searched like a note's) plus a `transcripts` row: who it belongs to, what it
    # was spawned from (visibility), and how far it has been read (appends read only the
    # tail). Its active-branch messages are kept for exact search (FTS5) and history.
    """
    CREATE INDEX files_source ON files(source);
    CREATE TABLE transcripts (
        file_id INTEGER PRIMARY KEY REFERENCES files(id) ON DELETE CASCADE,
        session_key TEXT NOT NULL UNIQUE,
        agent_id TEXT NOT NULL,
        parent_key TEXT,
        location TEXT NOT NULL,
        started TEXT NOT NULL DEFAULT '',
        last_activity TEXT NOT NULL DEFAULT '',
        read_bytes INTEGER NOT NULL DEFAULT 0,
        read_lines INTEGER NOT NULL DEFAULT 0,
        tail_check TEXT NOT NULL DEFAULT '',
        last_entry TEXT,
        tip TEXT,
        frontier TEXT NOT NULL DEFAULT '[]',
        messages INTEGER NOT NULL DEFAULT 0,
        malformed INTEGER NOT NULL DEFAULT 0,
        unknown INTEGER NOT NULL DEFAULT 0,
        oversized INTEGER NOT NULL DEFAULT 0
    );
    CREATE INDEX transcripts_agent ON transcripts(agent_id);
    CREATE INDEX transcripts_parent ON transcripts(parent_key);
    CREATE TABLE transcript_messages (
        id INTEGER PRIMARY KEY,
        file_id INTEGER NOT NULL REFERENCES transcripts(file_id) ON DELETE CASCADE,
        seq INTEGER NOT NULL,
        line INTEGER NOT NULL,
        timestamp TEXT NOT NULL,
        role TEXT NOT NULL,
        text TEXT NOT NULL
    );
    CREATE UNIQUE INDEX transcript_messages_seq ON transcript_messages(file_id, seq);
    CREATE VIRTUAL TABLE transcript_text USING fts5(
        text, content='transcript_messages', content_rowid='id',
        tokenize='unicode61 remove_diacritics 2'
    );
    CREATE TRIGGER transcript_messages_added AFTER INSERT ON transcript_messages BEGIN
        INSERT INTO transcript_text(rowid, text) VALUES (new.id, new.text);
    END;
    CREATE TRIGGER transcript_messages_removed AFTER DELETE ON transcript_messages BEGIN
        INSERT INTO transcript_text(transcript_text, rowid, text)
        VALUES ('delete', old.id, old.text);
    END;
    """,
    # 4: the names table (`apus.index.file_names`): the notes a query names by path, file
    # name or stem, folded when a file is written instead of in every searching process.
    # Filled here from the files already indexed, through the SQL function the store
    # registers before migrating (`file_names.SQL_FUNCTION`: one of a path's three keys a call).
    """
    CREATE TABLE file_names (
        key TEXT NOT NULL,
        file_id INTEGER NOT NULL REFERENCES files(id) ON DELETE CASCADE,
        PRIMARY KEY (key, file_id)
    ) WITHOUT ROWID;
    CREATE INDEX file_names_file ON file_names(file_id);
    INSERT OR IGNORE INTO file_names(key, file_id)
        SELECT apus_name_key(files.path, part.n), files.id
        FROM files, (SELECT 0 AS n UNION ALL SELECT 1 UNION ALL SELECT 2) AS part;
    """,
    # 5: the language of each note's prose (apus.vault.language), which ranking prefers when
    # it is the language of the query's candidates. It comes from each note's text, so every
    # note is read again on the next sync (its vectors come back from the cache).
    """
    ALTER TABLE files ADD COLUMN lang TEXT;
    UPDATE files SET chunking = '' WHERE source = 'memory';
    """,
)


def schema_version(db: Connection) -> int:
    """The schema version a database is at (0: none yet)."""
    return int(db.execute("PRAGMA user_version").fetchone()[0])


def migrate(db: Connection, path: Path) -> None:
    """Bring the database at `path` (open as `db`) to `SCHEMA_VERSION`; one written by a newer
    Apus is refused."""
    version = schema_version(db)
    if version > SCHEMA_VERSION:
        raise IndexCorruptError(
            f"The index at {path} was written by a newer Apus (schema {version}).",
            fix="upgrade Apus, or rebuild with `apus memory index --force`",
        )
    # A new database gets its whole schema in one transaction: a reader that opens it
    # during a first index sees no schema or the current one, never an early version
    # whose columns the searches assume. An existing one upgrades one step per
    # transaction, the version bump included, so a killed migration leaves the previous
    # version whole.
    steps = [SCHEMA_VERSION] if version == 0 else range(version + 1, SCHEMA_VERSION + 1)
    start = version
    for target in steps:
        script = "\n".join(MIGRATIONS[start:target])
        try:
            db.executescript(
                f"BEGIN IMMEDIATE;\n{script}\nPRAGMA user_version = {target};\nCOMMIT;"
            )
        except BaseException:
            if db.in_transaction:
                db.rollback()
            raise
        start = target
