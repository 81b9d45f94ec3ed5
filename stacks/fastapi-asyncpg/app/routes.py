"""The benchmark API's routes (contract/API.md). Handlers return ORJSONResponse directly: no
response_model, so no second validation pass over our own output."""

from __future__ import annotations

import time
from datetime import datetime, timezone
from uuid import UUID

import asyncpg
from fastapi import APIRouter, Request, Response
from fastapi.responses import ORJSONResponse
from pydantic import BaseModel, Field
from typing import Annotated

from . import db
from .body import json_body, parse_int64, parse_uuid
from .errors import bad_request, conflict, not_found

router = APIRouter()

MAX_BATCH_IDS = 50
MAX_BALANCE = 2**62
Smallint = Annotated[int, Field(ge=-32768, le=32767)]
Balance = Annotated[int, Field(ge=0, le=MAX_BALANCE)]
Int64 = Annotated[int, Field(ge=-(2**63), le=2**63 - 1)]


def pool(request: Request) -> asyncpg.Pool:
    return request.app.state.pool


def rfc3339(t: datetime) -> str:
    """UTC, 'Z' suffix, microseconds only when there are any."""
    return t.astimezone(timezone.utc).replace(tzinfo=None).isoformat() + "Z"


def status_dto(row: asyncpg.Record) -> dict:
    return {"id": str(row["id"]), "status": row["status"], "updatedAt": rfc3339(row["updated_at"])}


class CreateStatus(BaseModel):
    id: str
    status: Smallint


class UpdateStatus(BaseModel):
    status: Smallint


class CreateClient(BaseModel):
    balance: Balance


class Transfer(BaseModel):
    from_: Int64 = Field(alias="from")
    to: Int64
    amount: Int64


# ---- status (source 000) ----


@router.get("/status/{id}")
async def get_status(id: str, request: Request) -> Response:
    key = UUID(parse_uuid(id))
    row = await pool(request).fetchrow(db.SQL_STATUS_GET, key)
    if row is None:
        raise not_found("no status with this id")
    return ORJSONResponse(status_dto(row))


@router.get("/status")
async def get_statuses(request: Request) -> Response:
    raw = ",".join(request.query_params.getlist("ids"))
    if not raw:
        raise bad_request(f"ids: give 1 to {MAX_BATCH_IDS} comma-separated UUIDs")
    parts = raw.split(",")
    if len(parts) > MAX_BATCH_IDS:
        raise bad_request(f"ids: {len(parts)} ids given, at most {MAX_BATCH_IDS} allowed")
    keys = [UUID(parse_uuid(p)) for p in parts]
    rows = await pool(request).fetch(db.SQL_STATUS_GET_MANY, keys)
    return ORJSONResponse([status_dto(r) for r in rows])


@router.post("/status")
async def create_status(request: Request) -> Response:
    req = await json_body(request, CreateStatus)
    key = UUID(parse_uuid(req.id))
    row = await pool(request).fetchrow(db.SQL_STATUS_INSERT, key, req.status)
    if row is None:  # ON CONFLICT DO NOTHING returned nothing
        raise conflict("a status with this id already exists")
    return ORJSONResponse(status_dto(row), status_code=201)


@router.put("/status/{id}")
async def update_status(id: str, request: Request) -> Response:
    key = UUID(parse_uuid(id))
    req = await json_body(request, UpdateStatus)
    row = await pool(request).fetchrow(db.SQL_STATUS_UPDATE, key, req.status)
    if row is None:
        raise not_found("no status with this id")
    return ORJSONResponse(status_dto(row))


# ---- bank (source 001) ----


@router.post("/clients")
async def create_client(request: Request) -> Response:
    req = await json_body(request, CreateClient)
    row = await pool(request).fetchrow(db.SQL_CLIENT_INSERT, req.balance)
    return ORJSONResponse({"id": row["id"], "balance": row["balance"]}, status_code=201)


@router.get("/clients/{id}/balance")
async def get_balance(id: str, request: Request) -> Response:
    cid = parse_int64(id, "a client id")
    row = await pool(request).fetchrow(db.SQL_CLIENT_BALANCE, cid)
    if row is None:
        raise not_found("no client with this id")
    return ORJSONResponse({"id": row["id"], "balance": row["balance"]})


@router.post("/transfers")
async def transfer(request: Request) -> Response:
    t = await json_body(request, Transfer)
    if t.amount <= 0:
        raise bad_request('field "amount" must be positive')
    if t.from_ == t.to:
        raise bad_request('"from" and "to" must differ')
    async with pool(request).acquire() as conn, conn.transaction():
        # Both rows locked in id order (no deadlocks), then the move and the log, one transaction;
        # raising inside `transaction()` rolls it back.
        rows = await conn.fetch(db.SQL_TRANSFER_LOCK, t.from_, t.to)
        if len(rows) < 2:
            raise not_found("unknown client")
        balance = {r["id"]: r["balance"] for r in rows}
        if balance[t.from_] < t.amount:
            raise conflict("insufficient funds")
        if balance[t.to] > MAX_BALANCE - t.amount:
            raise conflict("the payee's balance would exceed 2^62")
        await conn.execute(db.SQL_TRANSFER_MOVE, t.from_, t.to, t.amount)
        await conn.execute(db.SQL_TRANSFER_LOG, t.from_, t.to, t.amount)
    return ORJSONResponse({"from": t.from_, "to": t.to, "amount": t.amount})


# ---- rows (sources 002, 003) ----


@router.get("/orders")
async def list_orders(request: Request) -> Response:
    raw = request.query_params.get("limit")
    limit = 10 if raw is None else parse_int64(raw, "a limit")
    if not 1 <= limit <= 1000:
        raise bad_request(f"limit: {limit} is outside 1…1000")
    rows = await pool(request).fetch(db.SQL_ORDERS, limit)
    return ORJSONResponse(
        [
            {
                "id": r["id"],
                "customer": r["customer"],
                "item": r["item"],
                "quantity": r["quantity"],
                "priceCents": r["price_cents"],
                "createdAt": rfc3339(r["created_at"]),
            }
            for r in rows
        ]
    )


# ---- ping (source 004) ----

_PING = b'{"ok":true,"message":"OK"}'


@router.get("/ping")
async def ping() -> Response:
    return Response(_PING, media_type="application/json")


@router.get("/time")
async def server_time() -> Response:
    return ORJSONResponse({"serverTime": int(time.time())})


@router.get("/db/ping")
async def db_ping(request: Request) -> Response:
    return Response(await pool(request).fetchval(db.SQL_DB_PING), media_type="application/json")


@router.get("/db/time")
async def db_time(request: Request) -> Response:
    return Response(await pool(request).fetchval(db.SQL_DB_TIME), media_type="application/json")
