"""One serialization convention for every request and result: dataclasses that turn into JSON-ready
dicts (`to_dict`) and back (`from_dict`).

The same dict is what `--json` prints, what MCP returns and what travels over the daemon's socket,
so an operation answered by the daemon rebuilds exactly the result the in-process call returns.
Datetimes travel as ISO 8601 strings; a field marked `wire=False` in its metadata stays local.
"""

from __future__ import annotations

__all__ = ["Record", "RecordError", "T", "decode", "encode", "stays_here"]

import dataclasses
import types
import typing
from datetime import date, datetime
from functools import cache
from pathlib import PurePath
from typing import Any, ClassVar, Self, TypeVar, Union

T = TypeVar("T")


class Record:
    """Mixin for dataclasses: `to_dict()` for JSON and `from_dict()` to rebuild the object."""

    __dataclass_fields__: ClassVar[dict[str, Any]]

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = encode(self)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Self:
        return decode(cls, data)


def stays_here(value: Any) -> bool:
    """Whether a record holds something in a field marked `wire=False`: what cannot travel to
    another process (an open file's lines), so the operation it asks for runs in this one."""
    return (
        dataclasses.is_dataclass(value)
        and not isinstance(value, type)
        and any(
            not f.metadata.get("wire", True) and getattr(value, f.name) is not None
            for f in dataclasses.fields(value)
        )
    )


def encode(value: Any) -> Any:
    """Plain JSON-ready data from records, dataclasses, datetimes, paths, sets and containers."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            f.name: encode(getattr(value, f.name))
            for f in dataclasses.fields(value)
            if f.metadata.get("wire", True)
        }
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, PurePath):
        return str(value)
    if isinstance(value, dict):
        return {str(k): encode(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [encode(v) for v in value]
    if isinstance(value, set | frozenset):
        return sorted(encode(v) for v in value)
    return value


class RecordError(ValueError):
    """Data that does not fit the record it should become (a field of the wrong type, say)."""


def decode(kind: type[T], data: Any) -> T:
    """Rebuild a value of type `kind` from what `encode` made of it. Data that does not fit (an
    unknown field, text where a number belongs) raises RecordError naming the field."""
    try:
        return typing.cast(T, _decode(kind, data))
    except RecordError:
        raise
    except (TypeError, ValueError) as exc:
        raise RecordError(str(exc)) from None


@cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _decode(kind: Any, data: Any) -> Any:
    origin = typing.get_origin(kind)
    if kind is Any:
        return data
    if data is None:
        if origin in (Union, types.UnionType) and type(None) in typing.get_args(kind):
            return None
        raise TypeError("a value is required")
    if origin in (Union, types.UnionType):
        options = [a for a in typing.get_args(kind) if a is not type(None)]
        errors = []
        for option in options:
            try:
                return _decode(option, data)
            except (TypeError, ValueError, KeyError) as exc:
                errors.append(str(exc))
        raise TypeError(errors[0] if errors else f"unexpected {type(data).__name__}")
    if origin is typing.Literal:
        allowed = typing.get_args(kind)
        if data not in allowed:
            raise ValueError(f"must be one of {', '.join(map(str, allowed))}")
        return data
    if origin in (list, tuple, set, frozenset) or kind in (list, tuple):
        if not isinstance(data, list | tuple):
            raise TypeError(f"expected a list, got {type(data).__name__}")
        args = typing.get_args(kind)
        if origin is tuple and len(args) > 1 and args[1] is not Ellipsis:
            return tuple(_decode(a, v) for a, v in zip(args, data, strict=False))
        item = args[0] if args else Any
        values = [_decode(item, v) for v in data]
        return (origin or kind)(values) if origin in (tuple, set, frozenset) else values
    if origin is dict or kind is dict:
        if not isinstance(data, dict):
            raise TypeError(f"expected an object, got {type(data).__name__}")
        args = typing.get_args(kind)
        value_kind = args[1] if len(args) == 2 else Any
        return {k: _decode(value_kind, v) for k, v in data.items()}
    if isinstance(kind, type) and dataclasses.is_dataclass(kind):
        if not isinstance(data, dict):
            raise TypeError(f"{kind.__name__} expects an object, got {type(data).__name__}")
        hints = _hints(kind)
        known = {f.name for f in dataclasses.fields(kind) if f.init}
        unknown = sorted(set(data) - known)
        if unknown:
            raise RecordError(f"unknown field(s): {', '.join(unknown)}")
        fields: dict[str, Any] = {}
        for f in dataclasses.fields(kind):
            if f.name in data and f.init:
                try:
                    fields[f.name] = _decode(hints.get(f.name, Any), data[f.name])
                except RecordError:
                    raise
                except (TypeError, ValueError) as exc:
                    raise RecordError(f"field {f.name}: {exc}") from None
        return kind(**fields)
    if kind is datetime:
        if isinstance(data, datetime):
            return data
        if not isinstance(data, str):
            raise TypeError("expected an ISO date or time")
        try:
            return datetime.fromisoformat(data)
        except ValueError:
            raise ValueError(f"'{data}' is not an ISO date or time") from None
    if kind is date:
        return date.fromisoformat(data) if isinstance(data, str) else data
    if kind is bool:
        if not isinstance(data, bool):
            raise TypeError("expected true or false")
        return data
    if kind is int:
        if isinstance(data, bool) or not isinstance(data, int):
            raise TypeError("expected a whole number")
        return data
    if kind is float:
        if isinstance(data, bool) or not isinstance(data, int | float):
            raise TypeError("expected a number")
        return float(data)
    if kind is str:
        if not isinstance(data, str):
            raise TypeError("expected text")
        return data
    return data
