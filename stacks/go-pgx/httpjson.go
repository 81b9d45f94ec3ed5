package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"time"
)

// maxBodyBytes is the contract's request body limit (64 KiB → 413 above it).
const maxBodyBytes = 64 << 10

// rfc3339Micro is RFC 3339 with up to microsecond precision; UTC prints as "Z".
const rfc3339Micro = "2006-01-02T15:04:05.999999Z07:00"

func formatTime(t time.Time) string { return t.UTC().Format(rfc3339Micro) }

// apiError is an error with an HTTP status and a contract error code.
type apiError struct {
	status int
	code   string
	msg    string
}

func (e *apiError) Error() string { return e.code + ": " + e.msg }

func errBadRequest(format string, args ...any) *apiError {
	return &apiError{http.StatusBadRequest, "bad_request", fmt.Sprintf(format, args...)}
}
func errNotFound(msg string) *apiError { return &apiError{http.StatusNotFound, "not_found", msg} }
func errConflict(msg string) *apiError { return &apiError{http.StatusConflict, "conflict", msg} }

type errorBody struct {
	Error   string `json:"error"`
	Message string `json:"message"`
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil { // only our own DTOs are marshalled; this does not happen
		http.Error(w, `{"error":"internal_error","message":"cannot encode response"}`, http.StatusInternalServerError)
		return
	}
	writeRawJSON(w, status, b)
}

// writeRawJSON writes bytes that already are JSON (e.g. the text a query returned).
func writeRawJSON(w http.ResponseWriter, status int, b []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

func writeError(w http.ResponseWriter, e *apiError) {
	writeJSON(w, e.status, errorBody{Error: e.code, Message: e.msg})
}

// fail answers a request that ended with err: an *apiError as itself, anything else (the
// database, a timeout) as 5xx, logged.
func (a *API) fail(w http.ResponseWriter, r *http.Request, err error) {
	var ae *apiError
	if errors.As(err, &ae) {
		writeError(w, ae)
		return
	}
	if errors.Is(err, context.DeadlineExceeded) {
		a.log.Warn("request timed out", "method", r.Method, "path", r.URL.Path, "err", err)
		writeError(w, &apiError{http.StatusServiceUnavailable, "timeout", "the database did not answer in time"})
		return
	}
	if errors.Is(err, context.Canceled) && r.Context().Err() != nil {
		return // the client went away; nobody reads the answer
	}
	a.log.Error("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	writeError(w, &apiError{http.StatusInternalServerError, "internal_error", "internal error"})
}

// decodeJSONBody checks the Content-Type (415), the size (413) and the syntax (400) of a JSON
// request body and unmarshals it into dst. Unknown fields are ignored; the caller checks that the
// required ones are present.
func decodeJSONBody(w http.ResponseWriter, r *http.Request, dst any) error {
	if err := checkJSONContentType(r.Header.Get("Content-Type")); err != nil {
		return err
	}
	if r.ContentLength > maxBodyBytes {
		return errTooLarge()
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return errTooLarge()
		}
		return errBadRequest("cannot read request body: %v", err)
	}
	return unmarshalBody(body, dst)
}

func errTooLarge() *apiError {
	return &apiError{http.StatusRequestEntityTooLarge, "payload_too_large",
		fmt.Sprintf("request body is larger than %d bytes", maxBodyBytes)}
}

func checkJSONContentType(ct string) error {
	if ct == "" {
		return &apiError{http.StatusUnsupportedMediaType, "unsupported_media_type", "Content-Type must be application/json"}
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil || mt != "application/json" {
		return &apiError{http.StatusUnsupportedMediaType, "unsupported_media_type",
			fmt.Sprintf("Content-Type must be application/json, not %q", ct)}
	}
	return nil
}

// unmarshalBody turns encoding/json's errors into readable 400s.
func unmarshalBody(body []byte, dst any) error {
	err := json.Unmarshal(body, dst)
	if err == nil {
		return nil
	}
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	switch {
	case errors.As(err, &typeErr):
		if typeErr.Field == "" {
			return errBadRequest("request body must be a JSON object")
		}
		return errBadRequest("field %q: want %s, got JSON %s", typeErr.Field, jsonKind(typeErr.Type.Kind().String()), typeErr.Value)
	case errors.As(err, &syntaxErr):
		return errBadRequest("malformed JSON at byte %d: %v", syntaxErr.Offset, syntaxErr)
	default:
		return errBadRequest("malformed JSON: %v", err)
	}
}

func jsonKind(goKind string) string {
	switch goKind {
	case "int64", "int32", "int16", "int":
		return "an integer"
	case "string":
		return "a string"
	default:
		return goKind
	}
}
