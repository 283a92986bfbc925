"""Generated frontmatter through the real sync: whatever one note's YAML holds, the other
notes are indexed and found, and the note itself is indexed or listed with a reason."""

from __future__ import annotations

import shutil
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from support.vaults import make_settings, search_paths, stored_paths, sync, write_note

FIELDS = ("title", "date", "importance", "tags", "triggers", "aliases")

# Scalars as YAML writes them, the hostile ones included: numbers of thousands of digits in
# every base, floats past the double range, special floats, dates that do not exist, quoting.
huge_digits = st.integers(min_value=300, max_value=6000)
scalars = st.one_of(
    st.integers().map(str),
    huge_digits.map(lambda n: "1" + "0" * n),
    huge_digits.map(lambda n: "0x" + "f" * n),
    huge_digits.map(lambda n: "0o" + "7" * n),
    huge_digits.map(lambda n: "0b" + "1" * n),
    huge_digits.map(lambda n: "-" + "9" * n),
    st.sampled_from(
        [
            ".inf",
            "-.inf",
            ".nan",
            "1e400",
            "-1e400",
            "~",
            "null",
            "true",
            "2025-02-30",
            "2026-13-01T25:61",
            "'#tag'",
            '"\\u00e9"',
            "''",
            "!!binary aGVsbG8=",
            "*undefined",
        ]
    ),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=40).map(
        lambda text: '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
    ),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4).map(lambda items: "[" + ", ".join(items) + "]"),
        st.dictionaries(st.sampled_from(["a", "b", "c"]), inner, max_size=3).map(
            lambda d: "{" + ", ".join(f"{k}: {v}" for k, v in d.items()) + "}"
        ),
    ),
    max_leaves=8,
)
frontmatters = st.dictionaries(st.sampled_from(FIELDS), values, min_size=1, max_size=5).map(
    lambda fields: "".join(f"{key}: {value}\n" for key, value in fields.items())
)


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(frontmatter=frontmatters)
def test_any_frontmatter_leaves_the_other_notes_indexed(
    frontmatter: str, tmp_path_factory: object
) -> None:
    root = Path(tmp_path_factory.mktemp("fuzz"))  # type: ignore[attr-defined]
    vault = root / "vault"
    write_note(vault, "before.md", "# Before\n\nThe alder grove.\n")
    write_note(vault, "odd.md", f"---\n{frontmatter}---\n# Odd\n\nThe odd one.\n")
    write_note(vault, "after.md", "---\nimportance: 5\ntags: [kept]\n---\n# After\n\nThe birch.\n")
    config = make_settings(vault)
    try:
        report = sync(config)
        indexed = stored_paths(config)
        assert {"before.md", "after.md"} <= indexed
        assert search_paths(config, "alder") == ["before.md"]
        assert search_paths(config, "birch", limit=5) == ["after.md"]
        skipped = {item.rel_path for item in report.skipped}
        assert "odd.md" in indexed or "odd.md" in skipped
        assert all(problem.reason and problem.fix for problem in report.problems)
        # A second sync reads no indexed note again and keeps what the first found.
        again = sync(config)
        assert again.unchanged == len(indexed) and again.problems == report.problems
    finally:
        shutil.rmtree(root, ignore_errors=True)
