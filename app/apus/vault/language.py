"""The language a note is written in, when its prose says so clearly (py3langid).

A vault that holds translations (documentation in many languages, the tldr pages) answers
an English question with the German page first when the German one quotes the query's
words: ranking prefers the passages in the language most of a query's candidates are in
(`apus.search.engine`), and that needs each note's language, found once as it is indexed.

Code, commands and links say nothing about the language of the prose around them and are
left out first; a note with too little prose left, or whose language the model is not sure
of, has none (it is ranked like any note).
"""

from __future__ import annotations

import re
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from py3langid.langid import LanguageIdentifier

# Fenced blocks, inline code, `{{placeholders}}`, links and bare URLs: not prose.
_NOT_PROSE = re.compile(
    r"```.*?```|~~~.*?~~~|`[^`\n]*`|\{\{.*?\}\}|<[a-z]+://[^>\s]*>|\b[a-z]+://\S+",
    re.DOTALL | re.IGNORECASE,
)
# The prose looked at: enough to tell a language apart (py3langid's cost grows with it).
_SAMPLE_CHARS = 600
# Fewer letters than this, and a note is not known by its language (a list of commands, a
# title alone: the model guesses).
_MIN_LETTERS = 24
# The model's probability a language must reach. On 100 tldr pages of each of 39 language
# folders (3,900 pages): at 0.5, 3,733 told right and 8 wrong; at 0.3, 3,764 and 82; at
# 0.9, 2,957 and 1 (short pages of commands are where it is unsure).
_MIN_PROBABILITY = 0.5

_lock = threading.Lock()
_identifier: LanguageIdentifier | None = None


def note_language(text: str) -> str | None:
    """The ISO 639-1 code of the language of `text`'s prose, or None when it is not clear."""
    prose = _NOT_PROSE.sub(" ", text[: _SAMPLE_CHARS * 4])[:_SAMPLE_CHARS]
    if sum(char.isalpha() for char in prose) < _MIN_LETTERS:
        return None
    language, probability = _model().classify(prose)
    return str(language) if probability >= _MIN_PROBABILITY else None


def _model() -> LanguageIdentifier:
    """The model, loaded once a process (about a second): only a sync that reads notes
    loads it, never a search."""
    global _identifier
    with _lock:
        if _identifier is None:
            from py3langid.langid import MODEL_FILE, LanguageIdentifier

            _identifier = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
        return _identifier
