"""Settings sections: frozen dataclasses whose values are checked as they are made (types,
ranges, choices), read from TOML-shaped data under camelCase keys or snake_case names, with
unknown keys refused. What a validation library would do for `apus.config`, without its
start-up cost: pydantic and the settings models built with it were a third of the imports of
a one-shot `apus memory search`.

Values are taken as a lenient reader takes them: `"7"` or `7.0` for an integer, `"yes"` or
`1` for a boolean, a list for a tuple; the messages of refused values name what was wanted
("Input should be a valid integer", "Input should be greater than or equal to 32").
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from typing import Any, Literal, Self, TypeVar

S = TypeVar("S", bound="Section")

_INTEGER = "Input should be a valid integer"
_NUMBER = "Input should be a valid number"
_BOOLEANS = {
    **dict.fromkeys(("1", "on", "t", "true", "y", "yes"), True),
    **dict.fromkeys(("0", "off", "f", "false", "n", "no"), False),
}


class SettingError(ValueError):
    """A value a section refused: where (`loc`, keys as written, list positions as ints),
    what kind of problem, and the message."""

    def __init__(self, loc: tuple[str | int, ...], kind: str, message: str) -> None:
        super().__init__(message)
        self.loc = loc
        self.kind = kind
        self.message = message

    def within(self, key: str | int) -> SettingError:
        """The same problem, one level further in (`key` holds where it was)."""
        return SettingError((key, *self.loc), self.kind, self.message)


def rules(
    *,
    ge: float | None = None,
    le: float | None = None,
    gt: float | None = None,
    alias: str | None = None,
    exclude: bool = False,
) -> dict[str, Any]:
    """A field's metadata: its bounds (`ge`, `le`, `gt`), its key when that is not the
    camelCase of its name (`alias`), or left out of the file's keys (`exclude`: filled from
    elsewhere)."""
    return {"ge": ge, "le": le, "gt": gt, "alias": alias, "exclude": exclude}


def camel(name: str) -> str:
    """`max_file_bytes` -> `maxFileBytes`: a setting's key in config.toml."""
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


@dataclasses.dataclass(frozen=True)
class SectionField:
    """One setting of a section as config.toml knows it."""

    name: str  # the attribute
    key: str  # the camelCase key
    hint: Any  # the type, resolved
    default: Any  # dataclasses.MISSING when made by a factory
    factory: Any
    exclude: bool
    bounds: tuple[float | None, float | None, float | None]  # ge, le, gt

    def default_value(self) -> Any:
        """The value a section made without this setting holds."""
        return self.default if self.factory is dataclasses.MISSING else self.factory()


class Section:
    """Base of the settings sections (each a frozen dataclass): checks every value as it is
    made, then the section's own rules (`_check`)."""

    def __post_init__(self) -> None:
        for spec in fields_of(type(self)):
            value = getattr(self, spec.name)
            try:
                checked = check(value, spec.hint, spec.bounds)
            except SettingError as error:
                raise error.within(spec.name) from None
            if checked is not value:
                object.__setattr__(self, spec.name, checked)
        self._check()

    def _check(self) -> None:
        """Rules across the section's values (raise SettingError)."""

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> Self:
        """The section of TOML-shaped `data`: keys camelCase or snake_case; a key the
        section does not have is refused."""
        by_key: dict[str, SectionField] = {}
        for spec in fields_of(cls):
            by_key[spec.key] = spec
            by_key[spec.name] = spec
        values: dict[str, Any] = {}
        written: dict[str, str] = {}  # attribute -> key as written, for errors
        for key, value in data.items():
            found = by_key.get(key) if isinstance(key, str) else None
            if found is None:
                raise SettingError((key,), "extra_forbidden", "Extra inputs are not permitted")
            values[found.name] = value
            written[found.name] = key
        try:
            return cls(**values)
        except SettingError as error:
            if error.loc and error.loc[0] in written:
                error.loc = (written[str(error.loc[0])], *error.loc[1:])
            raise

    def model_copy(self, *, update: Mapping[str, Any] | None = None) -> Self:
        """A copy with some values replaced (and checked)."""
        return dataclasses.replace(self, **(update or {}))  # type: ignore[type-var]


_FIELDS: dict[type, tuple[SectionField, ...]] = {}


def fields_of(cls: type[Section]) -> tuple[SectionField, ...]:
    """The settings of a section class, their types resolved once."""
    found = _FIELDS.get(cls)
    if found is None:
        hints = typing.get_type_hints(cls)
        found = tuple(
            SectionField(
                name=field.name,
                key=field.metadata.get("alias") or camel(field.name),
                hint=hints[field.name],
                default=field.default,
                factory=field.default_factory,
                exclude=bool(field.metadata.get("exclude")),
                bounds=(
                    field.metadata.get("ge"),
                    field.metadata.get("le"),
                    field.metadata.get("gt"),
                ),
            )
            for field in dataclasses.fields(cls)  # type: ignore[arg-type]
            if field.init
        )
        _FIELDS[cls] = found
    return found


def check(value: Any, hint: Any, bounds: tuple[float | None, float | None, float | None]) -> Any:
    """`value` as a setting of type `hint` (converted where a lenient reader would), within
    `bounds` (ge, le, gt); SettingError otherwise."""
    checked = _typed(value, hint)
    ge, le, gt = bounds
    if ge is not None and not checked >= ge:
        raise _out_of_bounds("greater_than_equal", "greater than or equal to", ge)
    if le is not None and not checked <= le:
        raise _out_of_bounds("less_than_equal", "less than or equal to", le)
    if gt is not None and not checked > gt:
        raise _out_of_bounds("greater_than", "greater than", gt)
    return checked


def _out_of_bounds(kind: str, words: str, bound: float) -> SettingError:
    shown = int(bound) if float(bound).is_integer() else bound
    return SettingError((), kind, f"Input should be {words} {shown}")


def _typed(value: Any, hint: Any) -> Any:
    origin = typing.get_origin(hint)
    if origin is Literal:
        return _literal(value, typing.get_args(hint))
    if origin in (types.UnionType, typing.Union):
        options = [arg for arg in typing.get_args(hint) if arg is not type(None)]
        if value is None and len(options) < len(typing.get_args(hint)):
            return None
        return _typed(value, options[0])
    if origin is tuple:
        return _tuple(value, typing.get_args(hint)[0])
    if origin is dict:
        return _dict(value, typing.get_args(hint)[1])
    if isinstance(hint, type) and issubclass(hint, Section):
        return _section(value, hint)
    reader = _SCALARS.get(hint)
    if reader is None:
        raise TypeError(f"a setting of type {hint!r} cannot be checked")
    return reader(value)


def _section(value: Any, cls: type[Section]) -> Section:
    if isinstance(value, cls):
        return value
    if isinstance(value, Mapping):
        return cls.from_mapping(value)
    raise SettingError(
        (), "model_type", f"Input should be a valid dictionary or instance of {cls.__name__}"
    )


def _literal(value: Any, choices: tuple[Any, ...]) -> Any:
    for choice in choices:
        if type(value) is type(choice) and value == choice:
            return choice
    shown = [repr(choice) for choice in choices]
    wanted = shown[0] if len(shown) == 1 else f"{', '.join(shown[:-1])} or {shown[-1]}"
    raise SettingError((), "literal_error", f"Input should be {wanted}")


def _tuple(value: Any, item: Any) -> tuple[Any, ...]:
    if isinstance(value, str | bytes) or not isinstance(value, list | tuple | set | frozenset):
        raise SettingError((), "tuple_type", "Input should be a valid tuple")
    checked = []
    for index, element in enumerate(value):
        try:
            checked.append(_typed(element, item))
        except SettingError as error:
            raise error.within(index) from None
    return tuple(checked)


def _dict(value: Any, item: Any) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise SettingError((), "dict_type", "Input should be a valid dictionary")
    checked = {}
    for key, element in value.items():
        if not isinstance(key, str):
            raise SettingError((key,), "string_type", "Input should be a valid string")
        try:
            checked[key] = _typed(element, item)
        except SettingError as error:
            raise error.within(key) from None
    return checked


def _int(value: Any) -> int:
    if isinstance(value, int):  # True and False too: 1 and 0
        return int(value)
    if isinstance(value, float):
        if value.is_integer():
            return int(value)
        raise SettingError((), "int_from_float", f"{_INTEGER}, got a number with a fractional part")
    if isinstance(value, str):
        text = value.strip()
        try:
            return int(text)
        except ValueError:
            pass
        try:
            number = float(text)
        except ValueError:
            number = None
        if number is not None and number.is_integer():
            return int(number)
        raise SettingError((), "int_parsing", f"{_INTEGER}, unable to parse string as an integer")
    raise SettingError((), "int_type", _INTEGER)


def _float(value: Any) -> float:
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            message = f"{_NUMBER}, unable to parse string as a number"
            raise SettingError((), "float_parsing", message) from None
    raise SettingError((), "float_type", _NUMBER)


def _bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in _BOOLEANS:
        return _BOOLEANS[value.strip().lower()]
    if isinstance(value, int | float | str):
        raise SettingError(
            (), "bool_parsing", "Input should be a valid boolean, unable to interpret input"
        )
    raise SettingError((), "bool_type", "Input should be a valid boolean")


def _str(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            pass
    raise SettingError((), "string_type", "Input should be a valid string")


_SCALARS: dict[Any, Any] = {int: _int, float: _float, bool: _bool, str: _str}
