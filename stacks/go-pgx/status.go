package main

import (
	"errors"
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/jackc/pgx/v5"
)

// status workload (source 000). SQL exactly as in contract/API.md.
const (
	sqlStatusGet     = `SELECT id, status, updated_at FROM status WHERE id = $1`
	sqlStatusGetMany = `SELECT id, status, updated_at FROM status WHERE id = ANY($1) ORDER BY id`
	sqlStatusInsert  = `INSERT INTO status (id, status) VALUES ($1, $2) ON CONFLICT (id) DO NOTHING RETURNING id, status, updated_at`
	sqlStatusUpdate  = `UPDATE status SET status = $2, updated_at = now() WHERE id = $1 RETURNING id, status, updated_at`
)

// maxBatchIDs is the most ids GET /status?ids= takes.
const maxBatchIDs = 50

type statusDTO struct {
	ID        string `json:"id"`
	Status    int16  `json:"status"`
	UpdatedAt string `json:"updatedAt"`
}

func newStatusDTO(id UUID, status int16, updatedAt time.Time) statusDTO {
	return statusDTO{ID: formatUUID(id), Status: status, UpdatedAt: formatTime(updatedAt)}
}

// scanStatus reads one row of (id, status, updated_at).
func scanStatus(row pgx.Row) (statusDTO, error) {
	var (
		id UUID
		st int16
		ts time.Time
	)
	if err := row.Scan(&id, &st, &ts); err != nil {
		return statusDTO{}, err
	}
	return newStatusDTO(id, st, ts), nil
}

type createStatusRequest struct {
	ID     *string `json:"id"`
	Status *int64  `json:"status"`
}

type updateStatusRequest struct {
	Status *int64 `json:"status"`
}

func parseStatusID(s string) (UUID, error) {
	id, ok := parseUUID(s)
	if !ok {
		return id, errBadRequest("%q is not a UUID (want the canonical 8-4-4-4-12 hex form)", s)
	}
	return id, nil
}

// parseStatusIDs parses the comma-separated ids of GET /status?ids=.
func parseStatusIDs(raw string) ([]UUID, error) {
	if raw == "" {
		return nil, errBadRequest("ids: give 1 to %d comma-separated UUIDs", maxBatchIDs)
	}
	n := strings.Count(raw, ",") + 1
	if n > maxBatchIDs {
		return nil, errBadRequest("ids: %d ids given, at most %d allowed", n, maxBatchIDs)
	}
	ids := make([]UUID, 0, n)
	for _, part := range strings.Split(raw, ",") {
		id, err := parseStatusID(part)
		if err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, nil
}

func validStatus(p *int64) (int16, error) {
	if p == nil {
		return 0, errBadRequest("field \"status\" is required")
	}
	if *p < math.MinInt16 || *p > math.MaxInt16 {
		return 0, errBadRequest("field \"status\": %d is outside smallint (%d…%d)", *p, math.MinInt16, math.MaxInt16)
	}
	return int16(*p), nil
}

func (req createStatusRequest) validate() (UUID, int16, error) {
	if req.ID == nil {
		return UUID{}, 0, errBadRequest("field \"id\" is required")
	}
	id, err := parseStatusID(*req.ID)
	if err != nil {
		return id, 0, err
	}
	st, err := validStatus(req.Status)
	return id, st, err
}

// GET /status/{id}
func (a *API) getStatus(w http.ResponseWriter, r *http.Request) {
	id, err := parseStatusID(chi.URLParam(r, "id"))
	if err != nil {
		a.fail(w, r, err)
		return
	}
	ctx, cancel := a.dbContext(r)
	defer cancel()
	dto, err := scanStatus(a.db.QueryRow(ctx, sqlStatusGet, id))
	if errors.Is(err, pgx.ErrNoRows) {
		err = errNotFound("no status with this id")
	}
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, dto)
}

// GET /status?ids=a,b,…
func (a *API) getStatuses(w http.ResponseWriter, r *http.Request) {
	ids, err := parseStatusIDs(strings.Join(r.URL.Query()["ids"], ","))
	if err != nil {
		a.fail(w, r, err)
		return
	}
	ctx, cancel := a.dbContext(r)
	defer cancel()
	rows, err := a.db.Query(ctx, sqlStatusGetMany, ids)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (statusDTO, error) { return scanStatus(row) })
	if err != nil {
		a.fail(w, r, err)
		return
	}
	if out == nil {
		out = []statusDTO{}
	}
	writeJSON(w, http.StatusOK, out)
}

// POST /status
func (a *API) createStatus(w http.ResponseWriter, r *http.Request) {
	var req createStatusRequest
	if err := decodeJSONBody(w, r, &req); err != nil {
		a.fail(w, r, err)
		return
	}
	id, st, err := req.validate()
	if err != nil {
		a.fail(w, r, err)
		return
	}
	ctx, cancel := a.dbContext(r)
	defer cancel()
	dto, err := scanStatus(a.db.QueryRow(ctx, sqlStatusInsert, id, st))
	if errors.Is(err, pgx.ErrNoRows) { // ON CONFLICT DO NOTHING returned nothing
		err = errConflict("a status with this id already exists")
	}
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, dto)
}

// PUT /status/{id}
func (a *API) updateStatus(w http.ResponseWriter, r *http.Request) {
	id, err := parseStatusID(chi.URLParam(r, "id"))
	if err != nil {
		a.fail(w, r, err)
		return
	}
	var req updateStatusRequest
	if err := decodeJSONBody(w, r, &req); err != nil {
		a.fail(w, r, err)
		return
	}
	st, err := validStatus(req.Status)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	ctx, cancel := a.dbContext(r)
	defer cancel()
	dto, err := scanStatus(a.db.QueryRow(ctx, sqlStatusUpdate, id, st))
	if errors.Is(err, pgx.ErrNoRows) {
		err = errNotFound("no status with this id")
	}
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, dto)
}
