package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// noDB is a DB that must not be reached: bad input is rejected before any query.
type noDB struct{ calls int }

var errNoDB = errors.New("no database in this test")

func (d *noDB) Exec(context.Context, string, ...any) (pgconn.CommandTag, error) {
	d.calls++
	return pgconn.CommandTag{}, errNoDB
}
func (d *noDB) Query(context.Context, string, ...any) (pgx.Rows, error) {
	d.calls++
	return nil, errNoDB
}
func (d *noDB) QueryRow(context.Context, string, ...any) pgx.Row { d.calls++; return errRow{} }
func (d *noDB) Begin(context.Context) (pgx.Tx, error)            { d.calls++; return nil, errNoDB }
func (d *noDB) Ping(context.Context) error                       { d.calls++; return errNoDB }

type errRow struct{}

func (errRow) Scan(...any) error { return errNoDB }

func testAPI(db DB) *API {
	return &API{db: db, queryTimeout: time.Second, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
}

const uuidA = "000016a5-3c0e-4307-4168-ff8fc74bd819"

func TestBadInputIsRejectedBeforeTheDatabase(t *testing.T) {
	big := `{"id":"` + uuidA + `","status":1,"pad":"` + strings.Repeat("x", maxBodyBytes) + `"}`
	ids51 := strings.TrimSuffix(strings.Repeat(uuidA+",", 51), ",")
	const jsonCT = "application/json"
	cases := []struct {
		name, method, path, ctype, body string
		status                          int
		code                            string
	}{
		{"status bad uuid", "GET", "/status/nope", "", "", 400, "bad_request"},
		{"status uuid without dashes", "GET", "/status/000016a53c0e43074168ff8fc74bd819", "", "", 400, "bad_request"},
		{"batch without ids", "GET", "/status", "", "", 400, "bad_request"},
		{"batch empty ids", "GET", "/status?ids=", "", "", 400, "bad_request"},
		{"batch trailing comma", "GET", "/status?ids=" + uuidA + ",", "", "", 400, "bad_request"},
		{"batch bad id", "GET", "/status?ids=" + uuidA + ",x", "", "", 400, "bad_request"},
		{"batch 51 ids", "GET", "/status?ids=" + ids51, "", "", 400, "bad_request"},
		{"create no content type", "POST", "/status", "", `{"id":"` + uuidA + `","status":1}`, 415, "unsupported_media_type"},
		{"create text/plain", "POST", "/status", "text/plain", `{"id":"` + uuidA + `","status":1}`, 415, "unsupported_media_type"},
		{"create too large", "POST", "/status", jsonCT, big, 413, "payload_too_large"},
		{"create malformed", "POST", "/status", jsonCT, `{"id":`, 400, "bad_request"},
		{"create empty body", "POST", "/status", jsonCT, ``, 400, "bad_request"},
		{"create array", "POST", "/status", jsonCT, `[]`, 400, "bad_request"},
		{"create null", "POST", "/status", jsonCT, `null`, 400, "bad_request"},
		{"create trailing garbage", "POST", "/status", jsonCT, `{"id":"` + uuidA + `","status":1}x`, 400, "bad_request"},
		{"create missing id", "POST", "/status", jsonCT, `{"status":1}`, 400, "bad_request"},
		{"create missing status", "POST", "/status", jsonCT, `{"id":"` + uuidA + `"}`, 400, "bad_request"},
		{"create status string", "POST", "/status", jsonCT, `{"id":"` + uuidA + `","status":"1"}`, 400, "bad_request"},
		{"create status float", "POST", "/status", jsonCT, `{"id":"` + uuidA + `","status":1.5}`, 400, "bad_request"},
		{"create status too big", "POST", "/status", jsonCT, `{"id":"` + uuidA + `","status":32768}`, 400, "bad_request"},
		{"create status too small", "POST", "/status", jsonCT, `{"id":"` + uuidA + `","status":-32769}`, 400, "bad_request"},
		{"create status beyond int64", "POST", "/status", jsonCT, `{"id":"` + uuidA + `","status":1e30}`, 400, "bad_request"},
		{"create id number", "POST", "/status", jsonCT, `{"id":1,"status":1}`, 400, "bad_request"},
		{"create id not uuid", "POST", "/status", jsonCT, `{"id":"x","status":1}`, 400, "bad_request"},
		{"update bad uuid", "PUT", "/status/x", jsonCT, `{"status":1}`, 400, "bad_request"},
		{"update wrong content type", "PUT", "/status/" + uuidA, "text/json", `{"status":1}`, 415, "unsupported_media_type"},
		{"update missing status", "PUT", "/status/" + uuidA, jsonCT, `{}`, 400, "bad_request"},
		{"update status bool", "PUT", "/status/" + uuidA, jsonCT, `{"status":true}`, 400, "bad_request"},
		{"update status out of range", "PUT", "/status/" + uuidA, jsonCT, `{"status":40000}`, 400, "bad_request"},
		{"client negative", "POST", "/clients", jsonCT, `{"balance":-1}`, 400, "bad_request"},
		{"client above 2^62", "POST", "/clients", jsonCT, `{"balance":4611686018427387905}`, 400, "bad_request"},
		{"client missing", "POST", "/clients", jsonCT, `{}`, 400, "bad_request"},
		{"client string", "POST", "/clients", jsonCT, `{"balance":"1"}`, 400, "bad_request"},
		{"client form", "POST", "/clients", "application/x-www-form-urlencoded", `balance=1`, 415, "unsupported_media_type"},
		{"balance bad id", "GET", "/clients/abc/balance", "", "", 400, "bad_request"},
		{"balance id beyond int64", "GET", "/clients/99999999999999999999/balance", "", "", 400, "bad_request"},
		{"transfer same client", "POST", "/transfers", jsonCT, `{"from":1,"to":1,"amount":5}`, 400, "bad_request"},
		{"transfer zero", "POST", "/transfers", jsonCT, `{"from":1,"to":2,"amount":0}`, 400, "bad_request"},
		{"transfer negative", "POST", "/transfers", jsonCT, `{"from":1,"to":2,"amount":-1}`, 400, "bad_request"},
		{"transfer missing to", "POST", "/transfers", jsonCT, `{"from":1,"amount":1}`, 400, "bad_request"},
		{"transfer from string", "POST", "/transfers", jsonCT, `{"from":"1","to":2,"amount":1}`, 400, "bad_request"},
		{"transfer too large", "POST", "/transfers", jsonCT, `{"from":1,"to":2,"amount":1,"pad":"` + strings.Repeat("x", maxBodyBytes) + `"}`, 413, "payload_too_large"},
		{"orders limit 0", "GET", "/orders?limit=0", "", "", 400, "bad_request"},
		{"orders limit 1001", "GET", "/orders?limit=1001", "", "", 400, "bad_request"},
		{"orders limit empty", "GET", "/orders?limit=", "", "", 400, "bad_request"},
		{"orders limit word", "GET", "/orders?limit=ten", "", "", 400, "bad_request"},
		{"unknown route", "GET", "/nope", "", "", 404, "not_found"},
		{"wrong method", "DELETE", "/status/" + uuidA, "", "", 405, "method_not_allowed"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			db := &noDB{}
			h := newRouter(testAPI(db), nil)
			req := httptest.NewRequest(tc.method, tc.path, strings.NewReader(tc.body))
			if tc.ctype != "" {
				req.Header.Set("Content-Type", tc.ctype)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tc.status {
				t.Fatalf("status %d, want %d; body %s", rec.Code, tc.status, rec.Body)
			}
			if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q", ct)
			}
			var body errorBody
			if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || body.Error != tc.code || body.Message == "" {
				t.Errorf("body %s, want error %q with a message", rec.Body, tc.code)
			}
			if db.calls != 0 {
				t.Errorf("the database was queried %d times for bad input", db.calls)
			}
		})
	}
}

func TestDatabaseErrorIs5xxAndHealthIs503(t *testing.T) {
	h := newRouter(testAPI(&noDB{}), nil)
	for path, want := range map[string]int{"/health": 503, "/status/" + uuidA: 500, "/db/ping": 500, "/orders": 500} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		if rec.Code != want {
			t.Errorf("GET %s: %d, want %d", path, rec.Code, want)
		}
	}
}

func TestPingAndTimeNeedNoDatabase(t *testing.T) {
	db := &noDB{}
	h := newRouter(testAPI(db), nil)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/ping", nil))
	if rec.Code != 200 || rec.Body.String() != `{"ok":true,"message":"OK"}` {
		t.Errorf("/ping: %d %s", rec.Code, rec.Body)
	}
	rec = httptest.NewRecorder()
	before := time.Now().Unix()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/time", nil))
	var got timeDTO
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil || got.ServerTime < before || got.ServerTime > time.Now().Unix() {
		t.Errorf("/time: %s", rec.Body)
	}
	if db.calls != 0 {
		t.Errorf("database queried")
	}
}

func TestParseStatusIDs(t *testing.T) {
	ids50 := strings.TrimSuffix(strings.Repeat(uuidA+",", 50), ",")
	got, err := parseStatusIDs(ids50)
	if err != nil || len(got) != 50 {
		t.Fatalf("50 ids: %v, %d", err, len(got))
	}
	if _, err := parseStatusIDs(ids50 + "," + uuidA); err == nil {
		t.Error("51 ids accepted")
	}
	if _, err := parseStatusIDs(""); err == nil {
		t.Error("0 ids accepted")
	}
}

func TestValidStatusBounds(t *testing.T) {
	for _, v := range []int64{math.MinInt16, -1, 0, 10, math.MaxInt16} {
		v := v
		if got, err := validStatus(&v); err != nil || int64(got) != v {
			t.Errorf("validStatus(%d) = %d, %v", v, got, err)
		}
	}
	for _, v := range []int64{math.MinInt16 - 1, math.MaxInt16 + 1, math.MaxInt64, math.MinInt64} {
		v := v
		if _, err := validStatus(&v); err == nil {
			t.Errorf("validStatus(%d) accepted", v)
		}
	}
	if _, err := validStatus(nil); err == nil {
		t.Error("missing status accepted")
	}
}

func TestParseLimit(t *testing.T) {
	if n, err := parseLimit(nil); err != nil || n != 10 {
		t.Errorf("default limit = %d, %v", n, err)
	}
	for _, s := range []string{"1", "100", "1000"} {
		if _, err := parseLimit([]string{s}); err != nil {
			t.Errorf("limit %s rejected", s)
		}
	}
	for _, s := range []string{"", "0", "-1", "1001", "1.5", "1e2", "x"} {
		if _, err := parseLimit([]string{s}); err == nil {
			t.Errorf("limit %q accepted", s)
		}
	}
}

func TestTransferValidation(t *testing.T) {
	p := func(v int64) *int64 { return &v }
	ok, err := transferRequest{From: p(1), To: p(2), Amount: p(math.MaxInt64)}.validate()
	if err != nil || ok != (transferDTO{1, 2, math.MaxInt64}) {
		t.Errorf("valid transfer rejected: %v", err)
	}
	for _, req := range []transferRequest{
		{To: p(2), Amount: p(1)}, {From: p(1), Amount: p(1)}, {From: p(1), To: p(2)},
		{From: p(1), To: p(2), Amount: p(0)}, {From: p(1), To: p(1), Amount: p(1)},
	} {
		if _, err := req.validate(); err == nil {
			t.Errorf("%+v accepted", req)
		}
	}
}

func TestFormatTime(t *testing.T) {
	cet := time.FixedZone("CET", 3600)
	for in, want := range map[time.Time]string{
		time.Date(2025, 1, 1, 0, 0, 1, 0, time.UTC):         "2025-01-01T00:00:01Z",
		time.Date(2025, 1, 1, 0, 0, 1, 123456000, time.UTC): "2025-01-01T00:00:01.123456Z",
		time.Date(2025, 1, 1, 0, 0, 1, 120000000, time.UTC): "2025-01-01T00:00:01.12Z",
		time.Date(2025, 1, 1, 1, 0, 1, 123456789, cet):      "2025-01-01T00:00:01.123456Z",
	} {
		if got := formatTime(in); got != want {
			t.Errorf("formatTime(%v) = %q, want %q", in, got, want)
		}
	}
}

func TestContentTypeWithCharsetIsAccepted(t *testing.T) {
	for _, ct := range []string{"application/json", "application/json; charset=utf-8", "Application/JSON"} {
		if err := checkJSONContentType(ct); err != nil {
			t.Errorf("%q rejected: %v", ct, err)
		}
	}
	for _, ct := range []string{"", "text/plain", "application/jsonx", "application/problem+json", ";;"} {
		if err := checkJSONContentType(ct); err == nil {
			t.Errorf("%q accepted", ct)
		}
	}
}

func TestTooLargeChunkedBodyIs413(t *testing.T) {
	h := newRouter(testAPI(&noDB{}), nil)
	body := `{"balance":1,"pad":"` + strings.Repeat("x", maxBodyBytes) + `"}`
	req := httptest.NewRequest(http.MethodPost, "/clients", io.MultiReader(strings.NewReader(body)))
	req.ContentLength = -1 // unknown length: the limit is enforced while reading
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusRequestEntityTooLarge {
		t.Errorf("status %d, want 413: %s", rec.Code, rec.Body)
	}
}
