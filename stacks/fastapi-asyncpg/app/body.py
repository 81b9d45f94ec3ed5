"""JSON request bodies checked the contract's way: 415 for a non-JSON Content-Type, 413 over
64 KiB, 400 for malformed JSON or a field of the wrong type (Pydantic strict mode: "1", 1.5 and
true are not integers)."""

from __future__ import annotations

import re
from typing import Annotated, TypeVar

from fastapi import Request
from pydantic import BaseModel, ValidationError

from .errors import ApiError, bad_request

MAX_BODY_BYTES = 64 * 1024

UUID_RE = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")

M = TypeVar("M", bound=BaseModel)


def _too_large() -> ApiError:
    return ApiError(413, "payload_too_large", f"request body is larger than {MAX_BODY_BYTES} bytes")


def _describe(e: ValidationError) -> str:
    first = e.errors(include_url=False)[0]
    where = ".".join(str(p) for p in first.get("loc", ()) if p != "__root__")
    return f"field {where!r}: {first['msg']}" if where else f"request body: {first['msg']}"


async def json_body(request: Request, model: type[M]) -> M:
    """Reads and validates the request body as `model`."""
    ct = request.headers.get("content-type")
    media = ct.split(";", 1)[0].strip().lower() if ct else ""
    if media != "application/json":
        shown = f", not {ct!r}" if ct else ""
        raise ApiError(415, "unsupported_media_type", f"Content-Type must be application/json{shown}")
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        raise _too_large()
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_BODY_BYTES:
            raise _too_large()
    try:
        return model.model_validate_json(body, strict=True)
    except ValidationError as e:
        raise bad_request(_describe(e)) from None


def parse_uuid(s: str) -> str:
    """The canonical 8-4-4-4-12 form (either case) → lower case; anything else → 400."""
    if not UUID_RE.match(s):
        raise bad_request(f"{s!r} is not a UUID (want the canonical 8-4-4-4-12 hex form)")
    return s.lower()


_INT_RE = re.compile(r"^-?[0-9]{1,19}$")


def parse_int64(s: str, what: str) -> int:
    """A decimal 64-bit integer (no exponent, no hex, no fraction) → int; anything else → 400."""
    if _INT_RE.match(s):
        v = int(s)
        if -(2**63) <= v < 2**63:
            return v
    raise bad_request(f"{s!r} is not {what} (want a decimal 64-bit integer)")


UuidStr = Annotated[str, "canonical UUID, checked by parse_uuid"]
