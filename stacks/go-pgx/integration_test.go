package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// These tests need a PostgreSQL with contract/schema.sql applied and contract/seed.sql loaded,
// reached through the contract's DB_* variables. They are skipped when DB_HOST is unset.
func integrationServer(t *testing.T) *httptest.Server {
	t.Helper()
	if os.Getenv("DB_HOST") == "" {
		t.Skip("DB_HOST is unset: no database for integration tests")
	}
	cfg, err := loadConfig(os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	pool, err := newPool(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	srv := httptest.NewServer(newRouter(testAPI(pool), newMetricsHandler(pool)))
	t.Cleanup(srv.Close)
	return srv
}

// call makes one request and decodes a JSON answer into dst (when not nil).
func call(t *testing.T, srv *httptest.Server, method, path, body string, dst any) int {
	t.Helper()
	code, err := do(srv, method, path, body, dst)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	return code
}

// do is call without the test: safe to use from other goroutines.
func do(srv *httptest.Server, method, path, body string, dst any) (int, error) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, srv.URL+path, rd)
	if err != nil {
		return 0, err
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if dst != nil {
		if err := json.NewDecoder(resp.Body).Decode(dst); err != nil {
			return resp.StatusCode, fmt.Errorf("decoding: %w", err)
		}
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, nil
}

func randomUUID() string {
	var u UUID
	_, _ = rand.Read(u[:])
	return formatUUID(u)
}

func TestIntegrationStatus(t *testing.T) {
	srv := integrationServer(t)
	id := randomUUID()
	var created statusDTO
	if code := call(t, srv, "POST", "/status", fmt.Sprintf(`{"id":%q,"status":3}`, strings.ToUpper(id)), &created); code != 201 {
		t.Fatalf("POST /status: %d", code)
	}
	if created.ID != id || created.Status != 3 || !strings.HasSuffix(created.UpdatedAt, "Z") {
		t.Errorf("created %+v", created)
	}
	if code := call(t, srv, "POST", "/status", fmt.Sprintf(`{"id":%q,"status":3}`, id), nil); code != 409 {
		t.Errorf("duplicate POST: %d, want 409", code)
	}
	time.Sleep(2 * time.Millisecond)
	var updated statusDTO
	if code := call(t, srv, "PUT", "/status/"+id, `{"status":-4}`, &updated); code != 200 || updated.Status != -4 || updated.UpdatedAt == created.UpdatedAt {
		t.Errorf("PUT: %d %+v", code, updated)
	}
	var got statusDTO
	if code := call(t, srv, "GET", "/status/"+id, "", &got); code != 200 || got != updated {
		t.Errorf("GET: %d %+v, want %+v", code, got, updated)
	}
	other := randomUUID()
	if code := call(t, srv, "GET", "/status/"+other, "", nil); code != 404 {
		t.Errorf("GET unknown: %d", code)
	}
	if code := call(t, srv, "PUT", "/status/"+other, `{"status":1}`, nil); code != 404 {
		t.Errorf("PUT unknown: %d", code)
	}
	var batch []statusDTO
	if code := call(t, srv, "GET", "/status?ids="+id+","+other+","+strings.ToUpper(id), "", &batch); code != 200 || len(batch) != 1 || batch[0] != updated {
		t.Errorf("batch: %d %+v", code, batch)
	}
}

func TestIntegrationBankConservesMoney(t *testing.T) {
	srv := integrationServer(t)
	const n, start = 4, 1000
	ids := make([]int64, n)
	for i := range ids {
		var c clientDTO
		if code := call(t, srv, "POST", "/clients", fmt.Sprintf(`{"balance":%d}`, start), &c); code != 201 || c.Balance != start {
			t.Fatalf("POST /clients: %d %+v", code, c)
		}
		ids[i] = c.ID
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	codes := map[int]int{}
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for k := 0; k < 25; k++ {
				from, to := ids[(w+k)%n], ids[(w+k+1+k%(n-1))%n]
				code, err := do(srv, "POST", "/transfers", fmt.Sprintf(`{"from":%d,"to":%d,"amount":%d}`, from, to, 1+(w*k)%400), nil)
				if err != nil {
					t.Error(err)
				}
				mu.Lock()
				codes[code]++
				mu.Unlock()
			}
		}(w)
	}
	wg.Wait()
	for code := range codes {
		if code != 200 && code != 409 {
			t.Errorf("transfer answered %d (%v)", code, codes)
		}
	}
	var sum int64
	for _, id := range ids {
		var c clientDTO
		if code := call(t, srv, "GET", fmt.Sprintf("/clients/%d/balance", id), "", &c); code != 200 || c.Balance < 0 {
			t.Fatalf("balance: %d %+v", code, c)
		}
		sum += c.Balance
	}
	if sum != n*start {
		t.Errorf("sum of balances %d, want %d (codes %v)", sum, n*start, codes)
	}
	if code := call(t, srv, "POST", "/transfers", fmt.Sprintf(`{"from":%d,"to":%d,"amount":%d}`, ids[0], ids[1], n*start+1), nil); code != 409 {
		t.Errorf("overdraft: %d, want 409", code)
	}
	if code := call(t, srv, "POST", "/transfers", fmt.Sprintf(`{"from":%d,"to":%d,"amount":1}`, ids[0], int64(1)<<62), nil); code != 404 {
		t.Errorf("unknown payee: %d, want 404", code)
	}
}

func TestIntegrationOrdersPingHealthMetrics(t *testing.T) {
	srv := integrationServer(t)
	var orders []orderDTO
	if code := call(t, srv, "GET", "/orders?limit=100", "", &orders); code != 200 || len(orders) != 100 || orders[0].ID != 1 || orders[99].ID != 100 {
		t.Errorf("orders: %d, %d rows", code, len(orders))
	}
	var ping map[string]any
	if code := call(t, srv, "GET", "/db/ping", "", &ping); code != 200 || ping["ok"] != true || ping["message"] != "OK" {
		t.Errorf("/db/ping: %d %v", code, ping)
	}
	var tm timeDTO
	if code := call(t, srv, "GET", "/db/time", "", &tm); code != 200 || tm.ServerTime < time.Now().Add(-time.Hour).Unix() {
		t.Errorf("/db/time: %d %v", code, tm)
	}
	if code := call(t, srv, "GET", "/health", "", nil); code != 200 {
		t.Errorf("/health: %d", code)
	}
	if code := call(t, srv, "GET", "/metrics", "", nil); code != 200 {
		t.Errorf("/metrics: %d", code)
	}
}
