package pod

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"strconv"
	"strings"
)

// Quantity is a Kubernetes resource quantity ("500m", "1", "128Mi", "1G",
// "1e3"). It keeps the text as written and the value in thousandths, rounded
// away from zero as Kubernetes does ("1.1m" is 2m). The zero value is 0.
// Quantities are plain values, safe to copy and to share between goroutines.
type Quantity struct {
	raw   string
	milli int64 // value in thousandths
}

// maxQuantityLen bounds the text ParseQuantity accepts; a longer quantity is
// garbage, and the bound keeps the arithmetic cheap on hostile input.
const maxQuantityLen = 100

// decimalSuffixes are the Kubernetes decimal SI suffixes, as powers of ten.
var decimalSuffixes = map[string]int{
	"n": -9, "u": -6, "m": -3, "": 0,
	"k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18,
}

// binarySuffixes are the Kubernetes binary SI suffixes, as powers of two.
var binarySuffixes = map[string]int{
	"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60,
}

// ParseQuantity parses a Kubernetes quantity: an optional sign, a decimal
// number ("1", "1.5", ".5"), and an optional suffix: a decimal SI suffix
// (n, u, m, k, M, G, T, P, E), a binary SI suffix (Ki, Mi, Gi, Ti, Pi, Ei) or
// a decimal exponent ("e3", "E-2"). The value is kept in thousandths, rounded
// away from zero; a value that does not fit in int64 thousandths is an error,
// as is anything else that Kubernetes would reject. Errors wrap
// ErrInvalidQuantity.
func ParseQuantity(s string) (Quantity, error) {
	milli, reason := parseMilli(s)
	if reason != "" {
		return Quantity{}, &QuantityError{Value: s, Reason: reason}
	}
	return Quantity{raw: s, milli: milli}, nil
}

// QuantityError is the error of ParseQuantity: the text and why it is not
// a quantity. It wraps ErrInvalidQuantity.
type QuantityError struct {
	Value  string
	Reason string // why it is not, e.g. "empty"
}

func (e *QuantityError) Error() string {
	return fmt.Sprintf("%v %q: %s", ErrInvalidQuantity, e.Value, e.Reason)
}

// Unwrap makes errors.Is(err, ErrInvalidQuantity) true.
func (e *QuantityError) Unwrap() error { return ErrInvalidQuantity }

// MustParseQuantity is ParseQuantity for constants in code and tests: it
// panics if s is not a valid quantity.
func MustParseQuantity(s string) Quantity {
	q, err := ParseQuantity(s)
	if err != nil {
		panic(err)
	}
	return q
}

// parseMilli returns the value of s in thousandths, or a reason why s is not
// a quantity.
func parseMilli(s string) (int64, string) {
	if s == "" {
		return 0, "empty"
	}
	if len(s) > maxQuantityLen {
		return 0, fmt.Sprintf("longer than %d characters", maxQuantityLen)
	}
	i := 0
	neg := false
	switch s[0] {
	case '-':
		neg = true
		i++
	case '+':
		i++
	}
	start := i
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	whole := s[start:i]
	frac := ""
	if i < len(s) && s[i] == '.' {
		i++
		start = i
		for i < len(s) && isDigit(s[i]) {
			i++
		}
		frac = s[start:i]
	}
	if whole == "" && frac == "" {
		return 0, "must start with a number, e.g. \"500m\" or \"128Mi\""
	}
	exp10, exp2, reason := quantitySuffix(s[i:])
	if reason != "" {
		return 0, reason
	}

	digits := strings.TrimLeft(whole+frac, "0")
	if digits == "" {
		return 0, ""
	}
	// value = digits * 10^scale * 2^exp2 thousandths
	scale := exp10 + 3 - len(frac)
	if len(digits)-1+scale >= 19 { // at least 10^19 > MaxInt64
		return 0, "out of range"
	}
	if -scale > len(digits)+19 { // far below one thousandth: rounds to ±1
		if neg {
			return -1, ""
		}
		return 1, ""
	}
	v, ok := new(big.Int).SetString(digits, 10)
	if !ok {
		return 0, "invalid number" // unreachable: digits are [0-9]+
	}
	v.Lsh(v, uint(exp2))
	if scale >= 0 {
		v.Mul(v, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale)), nil))
	} else {
		div := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(-scale)), nil)
		var rem big.Int
		v.QuoRem(v, div, &rem)
		if rem.Sign() != 0 {
			v.Add(v, big.NewInt(1)) // round away from zero, like Kubernetes
		}
	}
	if !v.IsInt64() {
		return 0, "out of range"
	}
	milli := v.Int64()
	if neg {
		milli = -milli
	}
	return milli, ""
}

// quantitySuffix interprets a quantity suffix as a power of ten and a power
// of two, or returns why it is not one.
func quantitySuffix(suffix string) (exp10, exp2 int, reason string) {
	if e, ok := decimalSuffixes[suffix]; ok {
		return e, 0, ""
	}
	if e, ok := binarySuffixes[suffix]; ok {
		return 0, e, ""
	}
	if len(suffix) > 1 && (suffix[0] == 'e' || suffix[0] == 'E') {
		body := suffix[1:]
		if body[0] == '+' || body[0] == '-' {
			body = body[1:]
		}
		if body != "" && strings.Trim(body, "0123456789") == "" {
			e, err := strconv.ParseInt(suffix[1:], 10, 32)
			if err != nil {
				return 0, 0, "out of range"
			}
			return int(e), 0, ""
		}
	}
	return 0, 0, fmt.Sprintf("unknown suffix %q (use one of n, u, m, k, M, G, T, P, E, Ki, Mi, Gi, Ti, Pi, Ei, or an exponent like e3)", suffix)
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// String returns the quantity as written in the manifest; a quantity that
// was not parsed (the zero value) prints its value.
func (q Quantity) String() string {
	if q.raw != "" {
		return q.raw
	}
	if q.milli%1000 == 0 {
		return strconv.FormatInt(q.milli/1000, 10)
	}
	return strconv.FormatInt(q.milli, 10) + "m"
}

// MilliValue returns the value in thousandths (CPU millicores).
func (q Quantity) MilliValue() int64 { return q.milli }

// Value returns the value as a whole number (bytes), rounded away from zero
// as Kubernetes does.
func (q Quantity) Value() int64 {
	v := q.milli / 1000
	if q.milli%1000 != 0 {
		if q.milli > 0 {
			v++
		} else {
			v--
		}
	}
	return v
}

// MarshalJSON writes the quantity as a JSON string, as written in the
// manifest ("128Mi"), so that hashes and API output see its value.
func (q Quantity) MarshalJSON() ([]byte, error) {
	return json.Marshal(q.String())
}

// UnmarshalJSON reads a quantity from a JSON string or number, as Kubernetes
// does. Errors wrap ErrInvalidQuantity.
func (q *Quantity) UnmarshalJSON(data []byte) error {
	data = bytes.TrimSpace(data)
	if bytes.Equal(data, []byte("null")) {
		return nil
	}
	s := string(data)
	if len(data) > 0 && data[0] == '"' {
		if err := json.Unmarshal(data, &s); err != nil {
			return fmt.Errorf("%w: %w", ErrInvalidQuantity, err)
		}
	}
	parsed, err := ParseQuantity(strings.TrimSpace(s))
	if err != nil {
		return err
	}
	*q = parsed
	return nil
}
