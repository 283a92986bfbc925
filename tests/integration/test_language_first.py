"""The query's language first where a vault holds translations: each note's language is
found as it is indexed, and a note in another language than most of the query's candidates
gives way to one in it, by words and by meaning alike."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from apus.index.store import Store
from apus.search.chunk_table import Candidates, language_weights
from apus.vault.language import note_language
from support.vaults import make_settings, search, sync, write_note

ENGLISH = (
    "# tar\n\n> Archiving utility, often combined with a compression method such as gzip.\n\n"
    "- Create an archive and write it to a file:\n\n`tar cf {{target.tar}} {{file1}}`\n\n"
    "- Create a compressed archive from a directory using relative paths:\n\n"
    "`tar czf {{target.tar.gz}} -C {{directory}} .`\n\n"
    "- List the contents of a file verbosely:\n\n`tar tvf {{source.tar}}`\n\n"
    "- Extract an archive into the current directory:\n\n`tar xf {{source.tar}}`\n"
)
# Short translations that quote the interface's English words: they match the English
# question's words as well as the English page does.
GERMAN = (
    "# tar\n\n> Archivierungswerkzeug.\n\n"
    "- Entpacke ein Archiv mit „Extract tar archive“ in das aktuelle Verzeichnis:\n\n"
    "`tar xf {{quelle.tar}}`\n"
)
FRENCH = (
    "# tar\n\n> Utilitaire d'archivage.\n\n"
    "- Extraire une archive avec « Extract tar archive » dans le répertoire courant :\n\n"
    "`tar xf {{source.tar}}`\n"
)


def test_a_notes_language_is_its_proses() -> None:
    assert note_language(ENGLISH) == "en"
    assert note_language(GERMAN) == "de"
    chinese = "# 解压\n\n使用 xz 压缩文件，然后解压缩这个文件到当前的目录里面。\n"
    assert note_language(chinese) == "zh"
    # Commands and links alone say nothing about a language.
    assert note_language("`tar xf {{a}}` `gzip -d {{b}}` <https://example.org/x>") is None


def test_the_query_language_comes_first(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    for folder, text in (("en", ENGLISH), ("de", GERMAN), ("fr", FRENCH)):
        write_note(vault, f"{folder}/tar.md", text)
    for number in range(6):  # the English pages a vault of translations holds most of
        write_note(
            vault,
            f"en/tool{number}.md",
            f"# tool{number}\n\n> Extract and create files with this archive tool, {number}.\n",
        )
    settings = make_settings(vault)
    sync(settings)
    store = Store(settings.index_dir(), readonly=True)
    try:
        assert set(store.file_languages().values()) == {"en", "de", "fr"}
    finally:
        store.close()
    off = make_settings(vault, memory__search__query__languageWeight=1.0)
    before = [hit.path for hit in search(off, "extract a tar archive", limit=20)]
    after = search(settings, "extract a tar archive", limit=20)
    paths = [hit.path for hit in after]
    assert paths.index("en/tar.md") < paths.index("de/tar.md")
    assert paths.index("en/tar.md") < paths.index("fr/tar.md")
    # Without a preference the short translations lead; with it, the English page does.
    assert before.index("de/tar.md") < before.index("en/tar.md"), before
    german = {hit.path: hit.explain.language for hit in after}
    assert german["de/tar.md"] == 0.9 and german["en/tar.md"] == 1.0
    # A German question: its own words find the German notes, and the German page leads.
    asked = [hit.path for hit in search(settings, "Archiv entpacken Verzeichnis", limit=20)]
    assert asked[0] == "de/tar.md"


def test_one_language_is_not_weighed() -> None:
    candidates = Candidates([1, 2], np.asarray([10, 11]), {}, {}, {10: "en", 11: "en"})
    weights = language_weights(candidates, np.asarray([1.0, 0.5]), 0.9)
    assert weights.tolist() == [1.0, 1.0]
    mixed = Candidates([1, 2, 3], np.asarray([10, 11, 12]), {}, {}, {10: "en", 11: "de"})
    # Most relevance is English: the German note gives way, one of unknown language does not.
    assert language_weights(mixed, np.asarray([1.0, 0.5, 0.9]), 0.9).tolist() == [1.0, 0.9, 1.0]
    assert language_weights(mixed, np.asarray([1.0, 0.5, 0.9]), 1.0).tolist() == [1.0, 1.0, 1.0]
