package main

import (
	"context"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

var (
	healthUp   = []byte(`{"status":"UP"}`)
	healthDown = []byte(`{"status":"DOWN"}`)
)

// GET /health: 200 once the pool can reach the database, 503 otherwise.
func (a *API) health(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if err := a.db.Ping(ctx); err != nil {
		writeRawJSON(w, http.StatusServiceUnavailable, healthDown)
		return
	}
	writeRawJSON(w, http.StatusOK, healthUp)
}

// newMetricsHandler serves /metrics: the standard process and Go runtime collectors, plus the
// pool's statistics (read at scrape time only, so they cost nothing on the request path).
func newMetricsHandler(pool *pgxpool.Pool) http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		collectors.NewGoCollector(),
	)
	if pool != nil {
		reg.MustRegister(newPoolCollector(pool))
	}
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg})
}

// poolCollector exports pgxpool.Stat.
type poolCollector struct {
	pool                                       *pgxpool.Pool
	maxConns, totalConns, idleConns, acquired  *prometheus.Desc
	acquireCount, acquireSeconds, emptyAcquire *prometheus.Desc
	canceledAcquire                            *prometheus.Desc
}

func newPoolCollector(pool *pgxpool.Pool) *poolCollector {
	d := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc("pgxpool_"+name, help, nil, nil)
	}
	return &poolCollector{
		pool:            pool,
		maxConns:        d("max_conns", "Maximum size of the pool."),
		totalConns:      d("total_conns", "Connections currently in the pool (idle, acquired, being built)."),
		idleConns:       d("idle_conns", "Idle connections in the pool."),
		acquired:        d("acquired_conns", "Connections currently acquired."),
		acquireCount:    d("acquire_count_total", "Successful acquires from the pool."),
		acquireSeconds:  d("acquire_duration_seconds_total", "Total time spent acquiring connections."),
		emptyAcquire:    d("empty_acquire_count_total", "Acquires that had to wait because the pool was empty."),
		canceledAcquire: d("canceled_acquire_count_total", "Acquires cancelled by their context."),
	}
}

func (c *poolCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.maxConns, c.totalConns, c.idleConns, c.acquired,
		c.acquireCount, c.acquireSeconds, c.emptyAcquire, c.canceledAcquire} {
		ch <- d
	}
}

func (c *poolCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.pool.Stat()
	gauge := func(d *prometheus.Desc, v float64) { ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v) }
	counter := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v)
	}
	gauge(c.maxConns, float64(s.MaxConns()))
	gauge(c.totalConns, float64(s.TotalConns()))
	gauge(c.idleConns, float64(s.IdleConns()))
	gauge(c.acquired, float64(s.AcquiredConns()))
	counter(c.acquireCount, float64(s.AcquireCount()))
	counter(c.acquireSeconds, s.AcquireDuration().Seconds())
	counter(c.emptyAcquire, float64(s.EmptyAcquireCount()))
	counter(c.canceledAcquire, float64(s.CanceledAcquireCount()))
}
