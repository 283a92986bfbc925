"""How a failed tool call reads: one sentence, then the fix, whatever failed."""

from __future__ import annotations

from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError

from apus.agents.tool_errors import tool_error_text
from apus.errors import ApusError

KNOWN = ["memory_search", "memory_get"]


def _raised(outer: ToolError, cause: BaseException) -> ToolError:
    """`outer` as the SDK raises it: from what the tool raised."""
    try:
        raise outer from cause
    except ToolError as exc:
        return exc


def test_a_crash_is_named_by_its_type_and_its_text_stays_on_the_server() -> None:
    crash = _raised(
        UnexpectedToolError("Error executing tool memory_get"), ValueError("secret detail")
    )
    text = tool_error_text("memory_get", KNOWN, crash)
    assert text.startswith("memory_get failed on an unexpected error in Apus (ValueError).")
    assert " Fix: " in text and "secret" not in text and "Error executing" not in text


def test_an_apus_error_gives_its_reason_and_fix_and_a_tool_s_own_sentence_is_kept() -> None:
    refused = _raised(UnexpectedToolError("Error executing tool x"), ApusError("Too big", "trim"))
    assert tool_error_text("x", KNOWN, refused) == "Too big. Fix: trim."
    own = _raised(ToolError("Error executing tool x: No. Fix: ask."), ToolError("No. Fix: ask."))
    assert tool_error_text("x", KNOWN, own) == "No. Fix: ask."
    bare = _raised(ToolError("Error executing tool x: no fix here"), ToolError("no fix here"))
    assert tool_error_text("x", KNOWN, bare).startswith("no fix here. Fix: call x again")


def test_an_unknown_tool_names_the_tools_there_are() -> None:
    text = tool_error_text("nope", KNOWN, ToolError("Unknown tool: nope"))
    assert text == "There is no tool named 'nope'. Fix: call one of memory_search, memory_get."
