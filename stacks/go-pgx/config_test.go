package main

import (
	"strings"
	"testing"
	"time"
)

func envMap(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestLoadConfigDefaults(t *testing.T) {
	c, err := loadConfig(envMap(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.HTTPPort != 8080 || c.DBPort != 5432 || c.PoolSize != 64 || c.QueryTimeout != 5*time.Second || !c.Prepared {
		t.Errorf("unexpected defaults: %+v", c)
	}
	if c.ListenAddr() != "127.0.0.1:8080" {
		t.Errorf("ListenAddr = %q", c.ListenAddr())
	}
}

func TestLoadConfigFromEnv(t *testing.T) {
	c, err := loadConfig(envMap(map[string]string{
		"HTTP_PORT": "18080", "DB_HOST": "db.local", "DB_PORT": "6543", "DB_NAME": "bench",
		"DB_USER": "u", "DB_PASSWORD": "p@ss/w:rd", "DB_POOL_SIZE": "100", "WORKERS": "4",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if c.HTTPPort != 18080 || c.PoolSize != 100 || c.Workers != 4 {
		t.Errorf("got %+v", c)
	}
	url := c.DatabaseURL()
	for _, want := range []string{"postgres://u:p%40ss%2Fw%3Ard@db.local:6543/bench?", "sslmode=disable"} {
		if !strings.Contains(url, want) {
			t.Errorf("DatabaseURL %q lacks %q", url, want)
		}
	}
}

func TestLoadConfigRejectsBadNumbers(t *testing.T) {
	for _, kv := range [][2]string{
		{"HTTP_PORT", "x"}, {"HTTP_PORT", "0"}, {"HTTP_PORT", "70000"},
		{"DB_PORT", "-1"}, {"DB_POOL_SIZE", "0"}, {"DB_POOL_SIZE", "many"}, {"QUERY_TIMEOUT_MS", "0"},
		{"DB_PREPARED", "no"},
	} {
		if _, err := loadConfig(envMap(map[string]string{kv[0]: kv[1]})); err == nil {
			t.Errorf("%s=%s accepted", kv[0], kv[1])
		}
	}
}

func TestDBPreparedOff(t *testing.T) {
	c, err := loadConfig(envMap(map[string]string{"DB_PREPARED": "off"}))
	if err != nil {
		t.Fatal(err)
	}
	if c.Prepared {
		t.Errorf("DB_PREPARED=off gave Prepared = true")
	}
}

func TestTLSPortNeedsItsFiles(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	if _, err := loadConfig(env(map[string]string{"TLS_PORT": "8443"})); err == nil {
		t.Error("TLS_PORT without TLS_CERT_FILE/TLS_KEY_FILE was accepted")
	}
	c, err := loadConfig(env(map[string]string{"TLS_PORT": "8443", "TLS_CERT_FILE": "c.pem", "TLS_KEY_FILE": "k.pem"}))
	if err != nil || c.TLSPort != 8443 || c.TLSCertFile != "c.pem" {
		t.Errorf("TLS config: %+v, %v", c, err)
	}
	if c, _ := loadConfig(env(nil)); c.TLSPort != 0 {
		t.Errorf("TLS is off by default, got port %d", c.TLSPort)
	}
}
