package main

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"time"
)

// Config is everything the server reads from its environment. The variable names are the
// benchmark contract's (contract/API.md); the rest have defaults documented in README.md.
type Config struct {
	HTTPPort     int
	DBHost       string
	DBPort       int
	DBName       string
	DBUser       string
	DBPassword   string
	DBSSLMode    string
	PoolSize     int32
	Workers      int // accepted for the contract; Go has no worker knob (see GOMAXPROCS)
	QueryTimeout time.Duration
	// Prepared is DB_PREPARED: "on" (default) keeps pgx's statement cache (each statement
	// prepared once per connection, by name); "off" uses pgx's QueryExecModeCacheDescribe (no
	// named server-side prepared statements), which is what PgBouncer's transaction pooling needs.
	Prepared bool
	// TLSPort, TLSCertFile, TLSKeyFile: HTTPS beside the plain port (the same handler), when the
	// stand measures what TLS costs (plan `[stand] tls = true`); 0 = off.
	TLSPort     int
	TLSCertFile string
	TLSKeyFile  string
}

// loadConfig reads the configuration from getenv (os.Getenv in production).
func loadConfig(getenv func(string) string) (Config, error) {
	c := Config{
		DBHost:     envOr(getenv, "DB_HOST", "127.0.0.1"),
		DBName:     envOr(getenv, "DB_NAME", "postgres"),
		DBUser:     envOr(getenv, "DB_USER", "postgres"),
		DBPassword: getenv("DB_PASSWORD"),
		DBSSLMode:  envOr(getenv, "DB_SSLMODE", "disable"),
	}
	var err error
	if c.HTTPPort, err = envInt(getenv, "HTTP_PORT", 8080, 1, 65535); err != nil {
		return c, err
	}
	if c.DBPort, err = envInt(getenv, "DB_PORT", 5432, 1, 65535); err != nil {
		return c, err
	}
	pool, err := envInt(getenv, "DB_POOL_SIZE", 64, 1, 10000)
	if err != nil {
		return c, err
	}
	c.PoolSize = int32(pool)
	if c.Workers, err = envInt(getenv, "WORKERS", 0, 0, 1<<16); err != nil {
		return c, err
	}
	ms, err := envInt(getenv, "QUERY_TIMEOUT_MS", 5000, 1, 600_000)
	if err != nil {
		return c, err
	}
	c.QueryTimeout = time.Duration(ms) * time.Millisecond
	if c.TLSPort, err = envInt(getenv, "TLS_PORT", 0, 0, 65535); err != nil {
		return c, err
	}
	c.TLSCertFile, c.TLSKeyFile = getenv("TLS_CERT_FILE"), getenv("TLS_KEY_FILE")
	if c.TLSPort > 0 && (c.TLSCertFile == "" || c.TLSKeyFile == "") {
		return c, fmt.Errorf("TLS_PORT=%d needs TLS_CERT_FILE and TLS_KEY_FILE", c.TLSPort)
	}
	switch v := envOr(getenv, "DB_PREPARED", "on"); v {
	case "on":
		c.Prepared = true
	case "off":
		c.Prepared = false
	default:
		return c, fmt.Errorf("DB_PREPARED=%q: want on or off", v)
	}
	return c, nil
}

// DatabaseURL is the pgx connection string; the pool size is set on the parsed config.
func (c Config) DatabaseURL() string {
	u := url.URL{
		Scheme: "postgres",
		User:   url.UserPassword(c.DBUser, c.DBPassword),
		Host:   net.JoinHostPort(c.DBHost, strconv.Itoa(c.DBPort)),
		Path:   "/" + c.DBName,
	}
	q := url.Values{}
	q.Set("sslmode", c.DBSSLMode)
	q.Set("application_name", "go-pgx")
	u.RawQuery = q.Encode()
	return u.String()
}

func (c Config) ListenAddr() string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(c.HTTPPort))
}

func envOr(getenv func(string) string, key, def string) string {
	if v := getenv(key); v != "" {
		return v
	}
	return def
}

func envInt(getenv func(string) string, key string, def, min, max int) (int, error) {
	v := getenv(key)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < min || n > max {
		return 0, fmt.Errorf("%s=%q: want an integer in %d..%d", key, v, min, max)
	}
	return n, nil
}
