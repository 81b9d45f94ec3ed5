// Command server is source 001's bank-go as that source published it (Habr, 2018), on the
// contract's paths so that plan 001 can drive it beside the fixed stacks: net/http, gorilla/mux,
// lib/pq through database/sql, and the source's flaws kept on purpose (README.md lists them):
//
//   - no connection pool: every request opens its own connection (sql.Open … Close);
//   - log.Fatal on a database error: the whole server exits, whoever else was being served;
//   - a transfer is four statements in autocommit, not a transaction: the payer's balance is read
//     and checked, then debited, then the payee credited, then the transfer logged — concurrent
//     transfers from one payer can all pass the check, and a crash between the statements loses
//     money.
//
// It is not production code and must not be copied: it is here to measure what those flaws cost.
package main

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"log"
	"net/http"
	"os"
	"strconv"

	"github.com/gorilla/mux"
	_ "github.com/lib/pq"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

var dsn string

func main() {
	dsn = fmt.Sprintf("host=%s port=%s dbname=%s user=%s password=%s sslmode=disable",
		env("DB_HOST", "127.0.0.1"), env("DB_PORT", "5432"), env("DB_NAME", "postgres"),
		env("DB_USER", "postgres"), os.Getenv("DB_PASSWORD"))

	r := mux.NewRouter()
	r.HandleFunc("/clients", newClient).Methods("POST")
	r.HandleFunc("/clients/{id}/balance", balance).Methods("GET")
	r.HandleFunc("/transfers", transfer).Methods("POST")
	// ceiling's contract: readiness and the ecosystem's standard exporter (the source had neither)
	r.HandleFunc("/health", health).Methods("GET")
	r.Handle("/metrics", promhttp.Handler()).Methods("GET")

	addr := "127.0.0.1:" + env("HTTP_PORT", "8080")
	log.Println("listening on", addr)
	log.Fatal(http.ListenAndServe(addr, r))
}

func env(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// connect opens a connection for this request only, as the source did (sql.Open per handler).
func connect() *sql.DB {
	db, err := sql.Open("postgres", dsn)
	if err != nil {
		log.Fatal(err)
	}
	return db
}

func writeJSON(w http.ResponseWriter, status int, v interface{}) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func fail(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, map[string]string{"error": code, "message": msg})
}

type client struct {
	ID      int64 `json:"id"`
	Balance int64 `json:"balance"`
}

// POST /clients {"balance": n}
func newClient(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Balance *int64 `json:"balance"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Balance == nil || *req.Balance < 0 {
		fail(w, http.StatusBadRequest, "bad_request", "want {\"balance\": n ≥ 0}")
		return
	}
	db := connect()
	defer db.Close()
	var c client
	err := db.QueryRow("INSERT INTO clients (balance) VALUES ($1) RETURNING id, balance", *req.Balance).
		Scan(&c.ID, &c.Balance)
	if err != nil {
		log.Fatal(err)
	}
	writeJSON(w, http.StatusCreated, c)
}

// GET /clients/{id}/balance
func balance(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(mux.Vars(r)["id"], 10, 64)
	if err != nil {
		fail(w, http.StatusBadRequest, "bad_request", "bad client id")
		return
	}
	db := connect()
	defer db.Close()
	var c client
	err = db.QueryRow("SELECT id, balance FROM clients WHERE id = $1", id).Scan(&c.ID, &c.Balance)
	if err == sql.ErrNoRows {
		fail(w, http.StatusNotFound, "not_found", "no client with this id")
		return
	}
	if err != nil {
		log.Fatal(err)
	}
	writeJSON(w, http.StatusOK, c)
}

type transferReq struct {
	From   int64 `json:"from"`
	To     int64 `json:"to"`
	Amount int64 `json:"amount"`
}

// POST /transfers {"from": a, "to": b, "amount": n}: four autocommit statements, no transaction.
func transfer(w http.ResponseWriter, r *http.Request) {
	var t transferReq
	if err := json.NewDecoder(r.Body).Decode(&t); err != nil || t.Amount <= 0 || t.From == t.To {
		fail(w, http.StatusBadRequest, "bad_request", "want {\"from\", \"to\" (different), \"amount\" > 0}")
		return
	}
	db := connect()
	defer db.Close()
	var payer int64
	err := db.QueryRow("SELECT balance FROM clients WHERE id = $1", t.From).Scan(&payer)
	if err == sql.ErrNoRows {
		fail(w, http.StatusNotFound, "not_found", "no client with this id")
		return
	}
	if err != nil {
		log.Fatal(err)
	}
	var exists bool
	if err := db.QueryRow("SELECT EXISTS (SELECT 1 FROM clients WHERE id = $1)", t.To).Scan(&exists); err != nil {
		log.Fatal(err)
	}
	if !exists {
		fail(w, http.StatusNotFound, "not_found", "no client with this id")
		return
	}
	if payer < t.Amount {
		fail(w, http.StatusConflict, "conflict", "the payer's balance is below the amount")
		return
	}
	if _, err := db.Exec("UPDATE clients SET balance = balance - $1 WHERE id = $2", t.Amount, t.From); err != nil {
		log.Fatal(err)
	}
	if _, err := db.Exec("UPDATE clients SET balance = balance + $1 WHERE id = $2", t.Amount, t.To); err != nil {
		log.Fatal(err)
	}
	if _, err := db.Exec("INSERT INTO transfers (from_id, to_id, amount) VALUES ($1, $2, $3)", t.From, t.To, t.Amount); err != nil {
		log.Fatal(err)
	}
	writeJSON(w, http.StatusOK, t)
}

// GET /health: a connection of its own, like every handler; never fatal (the stand polls it
// while the database may still be starting).
func health(w http.ResponseWriter, r *http.Request) {
	db := connect()
	defer db.Close()
	if err := db.Ping(); err != nil {
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "DOWN"})
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "UP"})
}
