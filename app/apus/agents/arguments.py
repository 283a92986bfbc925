"""Tool arguments as a model reads them: a schema whose defaults are the real ones, unknown
argument names refused by name, and a wrong value explained in one sentence with the fix.

The SDK checks arguments with pydantic and hands its report to the model as it is (the
error codes, the input echoed, a documentation URL) and drops names it does not know, so
`limit: 3` silently returned ten results. `CheckedTool` checks first and says it plainly.
"""

from __future__ import annotations

import difflib
from typing import TYPE_CHECKING, Any

from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools.base import Tool
from pydantic import ValidationError

if TYPE_CHECKING:
    from mcp.server.context import LifespanContextT, RequestT
    from mcp.server.mcpserver.context import Context

# Names agents bring from other memory tools, and the argument that means the same here.
_SYNONYMS = {
    "limit": "maxResults",
    "k": "maxResults",
    "top_k": "maxResults",
    "topK": "maxResults",
    "n": "maxResults",
    "count": "maxResults",
    "max_results": "maxResults",
    "min_score": "minScore",
    "q": "query",
    "text": "query",
    "start": "from",
    "offset": "from",
    "file": "path",
    "note": "path",
}


# pydantic error types that mean "not the type the schema takes" (int_parsing, int_type,
# int_from_float, float_parsing, string_type, list_type, ...).
_WRONG_TYPE = ("_parsing", "_type", "_from_float")


class CheckedTool(Tool):
    """A tool whose arguments are checked before the SDK validates them."""

    async def run(
        self,
        arguments: dict[str, Any],
        context: Context[LifespanContextT, RequestT],
        convert_result: bool = False,
    ) -> Any:
        check_arguments(self.name, self.parameters, arguments)
        try:
            self.fn_metadata.validate_arguments(arguments)
        except ValidationError as exc:
            raise ToolError(readable_error(self.name, self.parameters, exc)) from None
        return await super().run(arguments, context, convert_result)


def check_arguments(tool: str, schema: dict[str, Any], arguments: dict[str, Any]) -> None:
    """Refuse argument names the tool does not have, naming them and what was meant, and
    true/false where the schema takes no boolean (pydantic reads `true` as the number 1)."""
    properties = schema.get("properties", {})
    known = list(properties)
    unknown = [name for name in arguments if name not in known]
    if not unknown:
        _refuse_booleans(tool, properties, arguments)
        return
    hints = []
    for name in unknown:
        meant = _SYNONYMS.get(name)
        if meant not in known:
            close = difflib.get_close_matches(name, known, n=1)
            meant = close[0] if close else None
        hints.append(f"`{name}` (did you mean `{meant}`?)" if meant else f"`{name}`")
    noun = "argument" if len(unknown) == 1 else "arguments"
    only = f"with only {', '.join(f'`{name}`' for name in known)}" if known else "without arguments"
    raise ToolError(f"{tool} has no {noun} {', '.join(hints)}. Fix: call it again {only}.")


def _refuse_booleans(tool: str, properties: dict[str, Any], arguments: dict[str, Any]) -> None:
    for name, value in arguments.items():
        if isinstance(value, bool) and "boolean" not in _types(properties[name]):
            expected = _expected(properties[name]) or "another value"
            raise ToolError(
                f"`{name}` must be {expected}, not {_shown(value).lower()}. Fix: call {tool} "
                f"again with `{name}` {expected}."
            )


def _types(prop: dict[str, Any]) -> set[str]:
    """The JSON types a property's schema takes."""
    options = prop.get("anyOf", [prop])
    return {str(option.get("type")) for option in options}


def readable_error(tool: str, schema: dict[str, Any], exc: ValidationError) -> str:
    """One sentence per wrong argument, then the fix; no error codes, no URL."""
    properties = schema.get("properties", {})
    problems = []
    for error in exc.errors(include_url=False):
        name = ".".join(str(part) for part in error["loc"]) or "the arguments"
        if error["type"] == "missing":
            problems.append(f"`{name}` is required")
            continue
        message = str(error["msg"])
        expected = _expected(properties.get(name, {}))
        if expected and str(error["type"]).endswith(_WRONG_TYPE):
            # pydantic's words for a wrong type ("unable to parse string as an integer")
            # say how it failed, not what to pass.
            message = f"must be {expected}"
        elif message.startswith("Input should be "):
            message = "must be " + message.removeprefix("Input should be ")
        elif message.startswith("Value error, "):
            message = message.removeprefix("Value error, ")
        problems.append(f"`{name}` {message}, not {_shown(error.get('input'))}")
    first = exc.errors()[0]["loc"]
    top = str(first[0]) if first else ""
    expected = _expected(properties.get(top, {}))
    if top and expected:
        fix = f"call {tool} again with `{top}` {expected}"
    else:
        fix = f"call {tool} again with the arguments its input schema describes"
    return f"{'; '.join(problems)}. Fix: {fix}."


def _expected(prop: dict[str, Any]) -> str:
    """What a property takes, in words, from its schema."""
    kind = prop.get("type")
    if "enum" in prop:
        return "one of " + ", ".join(f'"{value}"' for value in prop["enum"])
    bounds = []
    if "minimum" in prop:
        bounds.append(f"at least {prop['minimum']}")
    if "maximum" in prop:
        bounds.append(f"at most {prop['maximum']}")
    words = {
        "integer": "a whole number",
        "number": "a number",
        "string": "a string",
        "array": "a list",
        "boolean": "true or false",
    }.get(str(kind), "")
    if not words:
        return ""
    return words + (f" ({' and '.join(bounds)})" if bounds else "")


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def publish_defaults(tool: Tool, defaults: dict[str, Any]) -> None:
    """Show the defaults the tool really uses, and optional arguments as what they take.

    An optional argument is written `X | None = None` in Python, which the schema turns into
    "X or null, default null": a model reading it learns nothing (`minScore: null`). Here
    it becomes X with the real default, or no default when absent means "no filter".
    """
    for name, prop in tool.parameters.get("properties", {}).items():
        options = prop.get("anyOf")
        if options and prop.get("default", ...) is None:
            kept = [option for option in options if option.get("type") != "null"]
            if len(kept) == 1:
                del prop["anyOf"]
                prop.update(kept[0])
            del prop["default"]
        if name in defaults:
            prop["default"] = defaults[name]
