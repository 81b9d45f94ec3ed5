package main

import (
	"net/http"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
)

// rows workload (sources 002, 003). SQL exactly as in contract/API.md.
const sqlOrders = `SELECT id, customer, item, quantity, price_cents, created_at FROM orders ORDER BY id LIMIT $1`

const (
	defaultOrdersLimit = 10
	maxOrdersLimit     = 1000
)

type orderDTO struct {
	ID         int64  `json:"id"`
	Customer   string `json:"customer"`
	Item       string `json:"item"`
	Quantity   int32  `json:"quantity"`
	PriceCents int64  `json:"priceCents"`
	CreatedAt  string `json:"createdAt"`
}

// parseLimit reads ?limit=: absent → 10, otherwise an integer in 1…1000.
func parseLimit(values []string) (int, error) {
	if len(values) == 0 {
		return defaultOrdersLimit, nil
	}
	n, err := strconv.Atoi(values[0])
	if err != nil || n < 1 || n > maxOrdersLimit {
		return 0, errBadRequest("limit: %q is not an integer in 1…%d", values[0], maxOrdersLimit)
	}
	return n, nil
}

// GET /orders?limit=N
func (a *API) listOrders(w http.ResponseWriter, r *http.Request) {
	limit, err := parseLimit(r.URL.Query()["limit"])
	if err != nil {
		a.fail(w, r, err)
		return
	}
	ctx, cancel := a.dbContext(r)
	defer cancel()
	rows, err := a.db.Query(ctx, sqlOrders, limit)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	out := make([]orderDTO, 0, limit)
	var createdAt time.Time
	var o orderDTO
	_, err = pgx.ForEachRow(rows, []any{&o.ID, &o.Customer, &o.Item, &o.Quantity, &o.PriceCents, &createdAt}, func() error {
		o.CreatedAt = formatTime(createdAt)
		out = append(out, o)
		return nil
	})
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}
