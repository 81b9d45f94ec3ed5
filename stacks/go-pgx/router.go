package main

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// DB is the part of *pgxpool.Pool the handlers use.
type DB interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Begin(ctx context.Context) (pgx.Tx, error)
	Ping(ctx context.Context) error
}

// API holds the handlers' dependencies.
type API struct {
	db           DB
	queryTimeout time.Duration
	log          *slog.Logger
}

// dbContext bounds the database work of one request.
func (a *API) dbContext(r *http.Request) (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.Context(), a.queryTimeout)
}

func newRouter(a *API, metrics http.Handler) http.Handler {
	r := chi.NewRouter()
	// No request logging: the hot path does only the work the contract asks for.
	r.Use(middleware.Recoverer)
	r.NotFound(func(w http.ResponseWriter, _ *http.Request) {
		writeError(w, errNotFound("no such route"))
	})
	r.MethodNotAllowed(func(w http.ResponseWriter, _ *http.Request) {
		writeError(w, &apiError{status: http.StatusMethodNotAllowed, code: "method_not_allowed", msg: "method not allowed on this route"})
	})

	// status (source 000)
	r.Get("/status/{id}", a.getStatus)
	r.Get("/status", a.getStatuses)
	r.Post("/status", a.createStatus)
	r.Put("/status/{id}", a.updateStatus)

	// bank (source 001)
	r.Post("/clients", a.createClient)
	r.Get("/clients/{id}/balance", a.getBalance)
	r.Post("/transfers", a.transfer)

	// rows (sources 002, 003)
	r.Get("/orders", a.listOrders)

	// ping (source 004)
	r.Get("/ping", a.ping)
	r.Get("/time", a.serverTime)
	r.Get("/db/ping", a.dbPing)
	r.Get("/db/time", a.dbTime)

	// operations
	r.Get("/health", a.health)
	if metrics != nil {
		r.Method(http.MethodGet, "/metrics", metrics)
	}
	return r
}
