package main

import (
	"context"
	"errors"
	"net/http"
	"strconv"

	"github.com/go-chi/chi/v5"
	"github.com/jackc/pgx/v5"
)

// bank workload (source 001, made sound). SQL exactly as in contract/API.md.
const (
	sqlClientInsert  = `INSERT INTO clients (balance) VALUES ($1) RETURNING id, balance`
	sqlClientBalance = `SELECT id, balance FROM clients WHERE id = $1`
	sqlTransferLock  = `SELECT id, balance FROM clients WHERE id IN ($1, $2) ORDER BY id FOR UPDATE`
	sqlTransferMove  = `UPDATE clients SET balance = balance + CASE WHEN id = $1 THEN -$3::bigint ELSE $3::bigint END WHERE id IN ($1, $2)`
	sqlTransferLog   = `INSERT INTO transfers (from_id, to_id, amount) VALUES ($1, $2, $3)`
)

// maxBalance is the contract's upper bound on a balance (cents): 0 ≤ balance ≤ 2^62.
const maxBalance int64 = 1 << 62

type clientDTO struct {
	ID      int64 `json:"id"`
	Balance int64 `json:"balance"`
}

type createClientRequest struct {
	Balance *int64 `json:"balance"`
}

func (req createClientRequest) validate() (int64, error) {
	if req.Balance == nil {
		return 0, errBadRequest("field \"balance\" is required")
	}
	if *req.Balance < 0 || *req.Balance > maxBalance {
		return 0, errBadRequest("field \"balance\": %d is outside 0…2^62", *req.Balance)
	}
	return *req.Balance, nil
}

type transferRequest struct {
	From   *int64 `json:"from"`
	To     *int64 `json:"to"`
	Amount *int64 `json:"amount"`
}

type transferDTO struct {
	From   int64 `json:"from"`
	To     int64 `json:"to"`
	Amount int64 `json:"amount"`
}

func (req transferRequest) validate() (transferDTO, error) {
	switch {
	case req.From == nil:
		return transferDTO{}, errBadRequest("field \"from\" is required")
	case req.To == nil:
		return transferDTO{}, errBadRequest("field \"to\" is required")
	case req.Amount == nil:
		return transferDTO{}, errBadRequest("field \"amount\" is required")
	case *req.Amount <= 0:
		return transferDTO{}, errBadRequest("field \"amount\" must be positive")
	case *req.From == *req.To:
		return transferDTO{}, errBadRequest("\"from\" and \"to\" must differ")
	}
	return transferDTO{From: *req.From, To: *req.To, Amount: *req.Amount}, nil
}

// parseClientID parses a client id from the path: a decimal int64.
func parseClientID(s string) (int64, error) {
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, errBadRequest("%q is not a client id (want a decimal 64-bit integer)", s)
	}
	return id, nil
}

// POST /clients
func (a *API) createClient(w http.ResponseWriter, r *http.Request) {
	var req createClientRequest
	if err := decodeJSONBody(w, r, &req); err != nil {
		a.fail(w, r, err)
		return
	}
	balance, err := req.validate()
	if err != nil {
		a.fail(w, r, err)
		return
	}
	ctx, cancel := a.dbContext(r)
	defer cancel()
	var c clientDTO
	if err := a.db.QueryRow(ctx, sqlClientInsert, balance).Scan(&c.ID, &c.Balance); err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, c)
}

// GET /clients/{id}/balance
func (a *API) getBalance(w http.ResponseWriter, r *http.Request) {
	id, err := parseClientID(chi.URLParam(r, "id"))
	if err != nil {
		a.fail(w, r, err)
		return
	}
	ctx, cancel := a.dbContext(r)
	defer cancel()
	var c clientDTO
	err = a.db.QueryRow(ctx, sqlClientBalance, id).Scan(&c.ID, &c.Balance)
	if errors.Is(err, pgx.ErrNoRows) {
		err = errNotFound("no client with this id")
	}
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, c)
}

// POST /transfers
func (a *API) transfer(w http.ResponseWriter, r *http.Request) {
	var req transferRequest
	if err := decodeJSONBody(w, r, &req); err != nil {
		a.fail(w, r, err)
		return
	}
	t, err := req.validate()
	if err != nil {
		a.fail(w, r, err)
		return
	}
	ctx, cancel := a.dbContext(r)
	defer cancel()
	if err := a.runTransfer(ctx, t); err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, t)
}

// runTransfer moves t.Amount from t.From to t.To in one transaction: lock both rows in id
// order, check, update both, log the transfer. Any error rolls the transaction back.
func (a *API) runTransfer(ctx context.Context, t transferDTO) (err error) {
	tx, err := a.db.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback(context.WithoutCancel(ctx))
		}
	}()

	rows, err := tx.Query(ctx, sqlTransferLock, t.From, t.To)
	if err != nil {
		return err
	}
	locked, err := pgx.CollectRows(rows, pgx.RowToStructByPos[clientDTO])
	if err != nil {
		return err
	}
	if len(locked) < 2 {
		return errNotFound("unknown client")
	}
	var payer, payee int64
	for _, c := range locked {
		if c.ID == t.From {
			payer = c.Balance
		} else {
			payee = c.Balance
		}
	}
	if payer < t.Amount {
		return errConflict("insufficient funds")
	}
	if payee > maxBalance-t.Amount {
		return errConflict("the payee's balance would exceed 2^62")
	}

	if _, err = tx.Exec(ctx, sqlTransferMove, t.From, t.To, t.Amount); err != nil {
		return err
	}
	if _, err = tx.Exec(ctx, sqlTransferLog, t.From, t.To, t.Amount); err != nil {
		return err
	}
	return tx.Commit(ctx)
}
