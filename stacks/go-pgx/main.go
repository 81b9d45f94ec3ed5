// Command server is the go-pgx reference stack of the ceiling benchmark: the benchmark API of
// contract/API.md on chi v5, pgx v5 (pgxpool) and the Prometheus Go client.
package main

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

func main() {
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	if err := run(log); err != nil {
		log.Error("server stopped", "err", err)
		os.Exit(1)
	}
}

func run(log *slog.Logger) error {
	cfg, err := loadConfig(os.Getenv)
	if err != nil {
		return err
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	pool, err := newPool(ctx, cfg)
	if err != nil {
		return err
	}
	defer pool.Close()

	srv := &http.Server{
		Addr:              cfg.ListenAddr(),
		Handler:           newRouter(&API{db: pool, queryTimeout: cfg.QueryTimeout, log: log}, newMetricsHandler(pool)),
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       15 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
	}

	errc := make(chan error, 2)
	go func() {
		log.Info("listening", "addr", srv.Addr, "pool_size", cfg.PoolSize,
			"gomaxprocs", runtime.GOMAXPROCS(0), "workers_env", cfg.Workers, "go", runtime.Version())
		errc <- srv.ListenAndServe()
	}()
	// HTTPS beside it on request (the same handler and timeouts; net/http's TLS defaults, HTTP/2
	// by ALPN as Go serves it unless told otherwise).
	var tlsSrv *http.Server
	if cfg.TLSPort > 0 {
		tlsSrv = &http.Server{
			Addr:              net.JoinHostPort("127.0.0.1", strconv.Itoa(cfg.TLSPort)),
			Handler:           srv.Handler,
			ReadHeaderTimeout: srv.ReadHeaderTimeout,
			ReadTimeout:       srv.ReadTimeout,
			WriteTimeout:      srv.WriteTimeout,
			IdleTimeout:       srv.IdleTimeout,
			MaxHeaderBytes:    srv.MaxHeaderBytes,
		}
		go func() {
			log.Info("listening with TLS", "addr", tlsSrv.Addr)
			errc <- tlsSrv.ListenAndServeTLS(cfg.TLSCertFile, cfg.TLSKeyFile)
		}()
	}

	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	stop() // a second signal kills the process the default way

	log.Info("shutting down")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if tlsSrv != nil {
		if err := tlsSrv.Shutdown(shutdownCtx); err != nil {
			return err
		}
		if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
			return err
		}
	}
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return err
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	log.Info("stopped")
	return nil
}

// newPool builds the pgx pool. It does not wait for the database: connections are made on
// demand, and /health answers 503 until the database can be reached.
func newPool(ctx context.Context, cfg Config) (*pgxpool.Pool, error) {
	pcfg, err := pgxpool.ParseConfig(cfg.DatabaseURL())
	if err != nil {
		return nil, err
	}
	pcfg.MaxConns = cfg.PoolSize
	if !cfg.Prepared {
		// DB_PREPARED=off: no named prepared statements on the server (PgBouncer's transaction
		// pooling hands a client a different server connection each transaction). pgx caches each
		// statement's description (learned once through the unnamed statement) and executes every
		// query in one round trip with Parse/Bind/Execute of the unnamed statement, so parameter
		// types stay known ([16]byte as uuid) — the simple protocol cannot encode [16]byte.
		pcfg.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeCacheDescribe
	}
	return pgxpool.NewWithConfig(ctx, pcfg)
}
