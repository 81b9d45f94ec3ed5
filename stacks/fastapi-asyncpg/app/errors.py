"""The contract's error shape, {"error": code, "message": text}, for every 4xx and 5xx."""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.responses import ORJSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException


class ApiError(Exception):
    """An answer other than success: status code, contract error code, human message."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message


def bad_request(message: str) -> ApiError:
    return ApiError(400, "bad_request", message)


def not_found(message: str) -> ApiError:
    return ApiError(404, "not_found", message)


def conflict(message: str) -> ApiError:
    return ApiError(409, "conflict", message)


def error_response(status: int, code: str, message: str) -> ORJSONResponse:
    return ORJSONResponse({"error": code, "message": message}, status_code=status)


_STARLETTE_CODES = {404: "not_found", 405: "method_not_allowed"}


def install(app: FastAPI) -> None:
    @app.exception_handler(ApiError)
    async def _api_error(_: Request, e: ApiError) -> ORJSONResponse:
        return error_response(e.status, e.code, e.message)

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(_: Request, e: StarletteHTTPException) -> ORJSONResponse:
        code = _STARLETTE_CODES.get(e.status_code, "bad_request" if e.status_code < 500 else "internal_error")
        return error_response(e.status_code, code, str(e.detail))

    @app.exception_handler(Exception)
    async def _internal(_: Request, e: Exception) -> ORJSONResponse:
        # The database failing, or a bug: logged by uvicorn, answered in the contract's shape.
        return error_response(500, "internal_error", "internal error")

    @app.exception_handler(TimeoutError)
    async def _timeout(_: Request, e: TimeoutError) -> ORJSONResponse:
        return error_response(503, "timeout", "the database did not answer in time")
