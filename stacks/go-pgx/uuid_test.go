package main

import "testing"

func TestParseUUID(t *testing.T) {
	const canon = "000016a5-3c0e-4307-4168-ff8fc74bd819"
	good := []string{canon, "000016A5-3C0E-4307-4168-FF8FC74BD819", "000016a5-3C0E-4307-4168-ff8fc74bd819"}
	for _, s := range good {
		u, ok := parseUUID(s)
		if !ok {
			t.Fatalf("parseUUID(%q) rejected", s)
		}
		if got := formatUUID(u); got != canon {
			t.Errorf("formatUUID(parseUUID(%q)) = %q, want %q", s, got, canon)
		}
	}
	bad := []string{
		"", "nope", "000016a53c0e43074168ff8fc74bd819", "{000016a5-3c0e-4307-4168-ff8fc74bd819}",
		"000016a5-3c0e-4307-4168-ff8fc74bd8190", "000016a5-3c0e-4307-4168-ff8fc74bd81",
		"g00016a5-3c0e-4307-4168-ff8fc74bd819", "000016a5-3c0e-4307-4168_ff8fc74bd819",
		"000016a5-3c0e-4307-41-68ff8fc74bd819", "urn:uuid:000016a5-3c0e-4307-4168-ff8fc",
		" 00016a5-3c0e-4307-4168-ff8fc74bd819",
	}
	for _, s := range bad {
		if _, ok := parseUUID(s); ok {
			t.Errorf("parseUUID(%q) accepted", s)
		}
	}
}

func FuzzParseUUID(f *testing.F) {
	f.Add("000016a5-3c0e-4307-4168-ff8fc74bd819")
	f.Add("zzzz")
	f.Fuzz(func(t *testing.T, s string) {
		u, ok := parseUUID(s)
		if ok {
			if back, ok2 := parseUUID(formatUUID(u)); !ok2 || back != u {
				t.Fatalf("round trip of %q failed", s)
			}
		}
	})
}
