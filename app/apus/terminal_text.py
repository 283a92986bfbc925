"""Text from notes made safe to print on a terminal: control characters become visible.

A note's name, title or body may hold ESC and other control characters; printed raw they
are commands to the terminal (clear the screen, set the window title, write a hyperlink,
rewrite what is on screen, or on some terminals worse). Each is replaced by one visible
character, so offsets into the text (highlight spans) stay valid.
"""

from __future__ import annotations

import re

_CONTROL_PICTURES = 0x2400  # U+2400..U+241F show C0 controls: ESC is "␛"
_DELETE_PICTURE = "\u2421"  # "␡"
_REPLACEMENT = "\ufffd"
# C0 (but tab, which only moves the cursor right) and DEL, C1 (U+0080..U+009F: a terminal
# may take U+009B as CSI), the bidi overrides and isolates (they reorder what is shown:
# "Trojan source"), and lone surrogates (from undecodable file names; they cannot even be
# written out as UTF-8). The second pattern leaves newlines too.
_OTHERS = "\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff"
_UNSAFE = re.compile(f"[\x00-\x08\x0a-\x1f{_OTHERS}]")
_UNSAFE_BUT_NEWLINES = re.compile(f"[\x00-\x08\x0b-\x1f{_OTHERS}]")


def _stand_in(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code < 0x20:
        return chr(_CONTROL_PICTURES + code)
    if code == 0x7F:
        return _DELETE_PICTURE
    return _REPLACEMENT


def terminal_safe(text: str, *, keep_newlines: bool = False) -> str:
    """`text` with every control character replaced by a visible stand-in, one for one.

    Tabs are kept; newlines too when `keep_newlines`.
    """
    pattern = _UNSAFE_BUT_NEWLINES if keep_newlines else _UNSAFE
    return pattern.sub(_stand_in, text) if pattern.search(text) else text
