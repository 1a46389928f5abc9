package pod

import (
	"encoding/json"
	"errors"
	"math"
	"math/big"
	"testing"
)

func TestParseQuantity(t *testing.T) {
	// The values are those Kubernetes' resource.ParseQuantity gives
	// (MilliValue, and Value for bytes).
	tests := []struct {
		in        string
		wantMilli int64
		wantValue int64
	}{
		{"0", 0, 0},
		{"-0", 0, 0},
		{"1", 1000, 1},
		{"+5", 5000, 5},
		{"-1", -1000, -1},
		{"100m", 100, 1},
		{"1.5", 1500, 2},
		{"-1.5", -1500, -2},
		{".5", 500, 1},
		{"5.", 5000, 5},
		{"0.1", 100, 1},
		{"1.1m", 2, 1},    // rounded up to a whole thousandth
		{"-1.1m", -2, -1}, // away from zero
		{"1n", 1, 1},
		{"1u", 1, 1},
		{"1000000u", 1000, 1},
		{"1k", 1_000_000, 1000},
		{"1M", 1_000_000_000, 1_000_000},
		{"1G", 1_000_000_000_000, 1_000_000_000},
		{"1T", 1e15, 1e12},
		{"1P", 1e18, 1e15},
		{"1Ki", 1024_000, 1024},
		{"128Mi", 134217728_000, 134217728},
		{"0.5Gi", 536870912_000, 536870912},
		{"1.5Gi", 1610612736_000, 1610612736},
		{"1Ti", 1099511627776_000, 1099511627776},
		{"1Pi", 1125899906842624_000, 1125899906842624},
		{"1e3", 1_000_000, 1000},
		{"1E3", 1_000_000, 1000},
		{"1e+3", 1_000_000, 1000},
		{"1e-3", 1, 1},
		{"12e-4", 2, 1},
		{"1e-400", 1, 1},
		{"0e400", 0, 0},
		{"0.000000000000000000000000000000001", 1, 1},
		{"00000123", 123000, 123},
		{"9223372036854775807m", math.MaxInt64, 9223372036854776},
		{"-9223372036854775807m", -math.MaxInt64, -9223372036854776},
		{"9223372036854775.807", math.MaxInt64, 9223372036854776},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			q, err := ParseQuantity(tt.in)
			if err != nil {
				t.Fatalf("ParseQuantity(%q): %v", tt.in, err)
			}
			if got := q.MilliValue(); got != tt.wantMilli {
				t.Errorf("MilliValue() = %d, want %d", got, tt.wantMilli)
			}
			if got := q.Value(); got != tt.wantValue {
				t.Errorf("Value() = %d, want %d", got, tt.wantValue)
			}
			if got := q.String(); got != tt.in {
				t.Errorf("String() = %q, want %q", got, tt.in)
			}
		})
	}
}

func TestParseQuantityErrors(t *testing.T) {
	tests := []struct {
		in   string
		want string
	}{
		{"", `pod: invalid quantity "": empty`},
		{"abc", `pod: invalid quantity "abc": must start with a number, e.g. "500m" or "128Mi"`},
		{"-", `pod: invalid quantity "-": must start with a number, e.g. "500m" or "128Mi"`},
		{".", `pod: invalid quantity ".": must start with a number, e.g. "500m" or "128Mi"`},
		{"Mi", `pod: invalid quantity "Mi": must start with a number, e.g. "500m" or "128Mi"`},
		{" 1", `pod: invalid quantity " 1": must start with a number, e.g. "500m" or "128Mi"`},
		{"1K", `pod: invalid quantity "1K": unknown suffix "K" (use one of n, u, m, k, M, G, T, P, E, Ki, Mi, Gi, Ti, Pi, Ei, or an exponent like e3)`},
		{"1 Mi", `pod: invalid quantity "1 Mi": unknown suffix " Mi" (use one of n, u, m, k, M, G, T, P, E, Ki, Mi, Gi, Ti, Pi, Ei, or an exponent like e3)`},
		{"1Mii", `pod: invalid quantity "1Mii": unknown suffix "Mii" (use one of n, u, m, k, M, G, T, P, E, Ki, Mi, Gi, Ti, Pi, Ei, or an exponent like e3)`},
		{"1e", `pod: invalid quantity "1e": unknown suffix "e" (use one of n, u, m, k, M, G, T, P, E, Ki, Mi, Gi, Ti, Pi, Ei, or an exponent like e3)`},
		{"1e3Mi", `pod: invalid quantity "1e3Mi": unknown suffix "e3Mi" (use one of n, u, m, k, M, G, T, P, E, Ki, Mi, Gi, Ti, Pi, Ei, or an exponent like e3)`},
		{"0x10", `pod: invalid quantity "0x10": unknown suffix "x10" (use one of n, u, m, k, M, G, T, P, E, Ki, Mi, Gi, Ti, Pi, Ei, or an exponent like e3)`},
		{"--1", `pod: invalid quantity "--1": must start with a number, e.g. "500m" or "128Mi"`},
		{"1.2.3", `pod: invalid quantity "1.2.3": unknown suffix ".3" (use one of n, u, m, k, M, G, T, P, E, Ki, Mi, Gi, Ti, Pi, Ei, or an exponent like e3)`},
		{"1E", `pod: invalid quantity "1E": out of range`}, // 10^21 thousandths
		{"8Ei", `pod: invalid quantity "8Ei": out of range`},
		{"1e400", `pod: invalid quantity "1e400": out of range`},
		{"1e99999999999", `pod: invalid quantity "1e99999999999": out of range`},
		{"9223372036854775808m", `pod: invalid quantity "9223372036854775808m": out of range`},
		{"99999999999999999999999999", `pod: invalid quantity "99999999999999999999999999": out of range`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			q, err := ParseQuantity(tt.in)
			if err == nil {
				t.Fatalf("ParseQuantity(%q) = %v, want an error", tt.in, q)
			}
			if !errors.Is(err, ErrInvalidQuantity) {
				t.Errorf("error %v does not wrap ErrInvalidQuantity", err)
			}
			if err.Error() != tt.want {
				t.Errorf("error:\n got %s\nwant %s", err, tt.want)
			}
		})
	}
}

func TestQuantityJSON(t *testing.T) {
	tests := []struct {
		name      string
		in        string // JSON
		wantMilli int64
		wantOut   string // JSON after a round trip
	}{
		{"string", `"128Mi"`, 134217728_000, `"128Mi"`},
		{"number", `1024`, 1024_000, `"1024"`},
		{"exponent number", `1e3`, 1_000_000, `"1e3"`},
		{"spaces", `" 1Gi "`, 1073741824_000, `"1Gi"`},
		{"null", `null`, 0, `"0"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var q Quantity
			if err := json.Unmarshal([]byte(tt.in), &q); err != nil {
				t.Fatalf("Unmarshal(%s): %v", tt.in, err)
			}
			if q.MilliValue() != tt.wantMilli {
				t.Errorf("MilliValue() = %d, want %d", q.MilliValue(), tt.wantMilli)
			}
			out, err := json.Marshal(q)
			if err != nil {
				t.Fatal(err)
			}
			if string(out) != tt.wantOut {
				t.Errorf("Marshal = %s, want %s", out, tt.wantOut)
			}
		})
	}
	var q Quantity
	if err := json.Unmarshal([]byte(`"12XB"`), &q); !errors.Is(err, ErrInvalidQuantity) {
		t.Errorf("Unmarshal(\"12XB\") = %v, want ErrInvalidQuantity", err)
	}
}

func TestQuantityZeroValue(t *testing.T) {
	var q Quantity
	if q.String() != "0" || q.MilliValue() != 0 || q.Value() != 0 {
		t.Errorf("zero Quantity = %q, %d, %d", q.String(), q.MilliValue(), q.Value())
	}
	if got := (Quantity{milli: 1500}).String(); got != "1500m" {
		t.Errorf("String() of an unparsed 1.5 = %q, want 1500m", got)
	}
}

// FuzzParseQuantity checks that ParseQuantity never panics and that a
// parsed quantity survives a JSON round trip.
func FuzzParseQuantity(f *testing.F) {
	for _, s := range []string{"0", "100m", "1.5", "128Mi", "1e3", "-1.1m", "9223372036854775807m", "1e-400", ".5Gi"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		q, err := ParseQuantity(s)
		if err != nil {
			if !errors.Is(err, ErrInvalidQuantity) {
				t.Errorf("ParseQuantity(%q): %v does not wrap ErrInvalidQuantity", s, err)
			}
			return
		}
		if q.String() != s {
			t.Errorf("String() = %q, want %q", q.String(), s)
		}
		b, err := json.Marshal(q)
		if err != nil {
			t.Fatal(err)
		}
		var back Quantity
		if err := json.Unmarshal(b, &back); err != nil || back.MilliValue() != q.MilliValue() {
			t.Errorf("round trip of %q: %v, %d != %d", s, err, back.MilliValue(), q.MilliValue())
		}
		// Value is m/1000 rounded away from zero: |v|-1 < |m|/1000 <= |v|.
		v, m := big.NewInt(q.Value()), big.NewInt(q.MilliValue())
		v.Abs(v)
		m.Abs(m)
		hi := new(big.Int).Mul(v, big.NewInt(1000))
		lo := new(big.Int).Sub(hi, big.NewInt(1000))
		if (v.Sign() != 0 && lo.Cmp(m) >= 0) || hi.Cmp(m) < 0 {
			t.Errorf("Value() = %d for %d thousandths: not rounded away from zero", q.Value(), q.MilliValue())
		}
	})
}
