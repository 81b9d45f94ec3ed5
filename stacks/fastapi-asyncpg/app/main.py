"""The FastAPI application: routes, error handlers, the pool's lifespan, /health and /metrics."""

from __future__ import annotations

from contextlib import asynccontextmanager

from fastapi import FastAPI, Request, Response
from fastapi.responses import ORJSONResponse
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, Gauge, generate_latest

from . import config, db, errors, nagle
from .gc_pauses import GcPauseMonitor
from .loop_lag import LoopLagMonitor
from .routes import router

settings = config.load()
# TCP_NODELAY=0 (an experiment on source 004's 41-ms claim, nagle.py); off unless asked
nagle.apply_from_env()

# The pool's state, the event loop's lag (loop_lag.py) and GC pauses (gc_pauses.py), beside the
# default process and GC-count collectors of this worker.
POOL_SIZE = Gauge("db_pool_connections", "Connections in this worker's asyncpg pool")
POOL_IDLE = Gauge("db_pool_idle_connections", "Idle connections in this worker's asyncpg pool")


@asynccontextmanager
async def lifespan(app: FastAPI):
    app.state.pool = await db.create_pool(settings)
    app.state.loop_lag = LoopLagMonitor()
    app.state.loop_lag.start()
    app.state.gc_pauses = GcPauseMonitor()
    app.state.gc_pauses.install()
    try:
        yield
    finally:
        app.state.gc_pauses.uninstall()
        await app.state.loop_lag.stop()
        await app.state.pool.close()


app = FastAPI(
    title="ceiling benchmark API (FastAPI + asyncpg)",
    lifespan=lifespan,
    default_response_class=ORJSONResponse,
    # no interactive docs on the measured server
    docs_url=None,
    redoc_url=None,
    openapi_url=None,
)
errors.install(app)
app.include_router(router)


@app.get("/health")
async def health(request: Request) -> Response:
    try:
        await request.app.state.pool.fetchval("SELECT 1")
    except Exception as e:  # noqa: BLE001 — any failure to reach the database is "down"
        return errors.error_response(503, "unavailable", f"database unreachable: {e}")
    return ORJSONResponse({"status": "UP"})


@app.get("/metrics")
async def metrics(request: Request) -> Response:
    p = request.app.state.pool
    POOL_SIZE.set(p.get_size())
    POOL_IDLE.set(p.get_idle_size())
    request.app.state.loop_lag.publish()
    request.app.state.gc_pauses.publish()
    return Response(generate_latest(REGISTRY), media_type=CONTENT_TYPE_LATEST)
