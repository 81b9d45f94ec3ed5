package main

import (
	"net/http"
	"time"
)

// ping workload (source 004): exact bodies and SQL.
const (
	sqlDBPing = `SELECT json_build_object('ok', true, 'message', 'OK')::text`
	sqlDBTime = `SELECT json_build_object('serverTime', extract(epoch from now())::integer)::text`
)

var pingBody = []byte(`{"ok":true,"message":"OK"}`)

type timeDTO struct {
	ServerTime int64 `json:"serverTime"`
}

// GET /ping
func (a *API) ping(w http.ResponseWriter, _ *http.Request) {
	writeRawJSON(w, http.StatusOK, pingBody)
}

// GET /time
func (a *API) serverTime(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, timeDTO{ServerTime: time.Now().Unix()})
}

// GET /db/ping
func (a *API) dbPing(w http.ResponseWriter, r *http.Request) { a.dbText(w, r, sqlDBPing) }

// GET /db/time
func (a *API) dbTime(w http.ResponseWriter, r *http.Request) { a.dbText(w, r, sqlDBTime) }

// dbText answers with the text a one-value query returns, verbatim.
func (a *API) dbText(w http.ResponseWriter, r *http.Request, sql string) {
	ctx, cancel := a.dbContext(r)
	defer cancel()
	var body []byte
	if err := a.db.QueryRow(ctx, sql).Scan(&body); err != nil {
		a.fail(w, r, err)
		return
	}
	writeRawJSON(w, http.StatusOK, body)
}
