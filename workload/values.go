package workload

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// This file parses fio's numeric values: sizes (parse.c str_to_decimal and
// __get_mult_bytes), times (get_mult_time) and plain integers, including
// fio's "(...)" arithmetic (expr.go).

// defaultKBBase is fio's default kb_base.
const defaultKBBase = 1024

// sizeMult returns the multiplier of a lower-cased size suffix under
// kb_base kb (1024 or 1000), as fio's __get_mult_bytes computes it: k, m,
// g, t and p (alone, or followed by "b" or "i") are powers of kb; kib,
// mib, gib, tib and pib are powers of the other base (1000 when kb is
// 1024: fio's documented "compatibility mode" reverses the IEC meaning,
// and kb_base=1000 flips both); "b" and no suffix are bytes.
func sizeMult(suffix string, kb int64) (int64, bool) {
	switch suffix {
	case "", "b":
		return 1, true
	}
	other := int64(1000)
	if kb == 1000 {
		other = 1024
	}
	p := strings.IndexByte("kmgtp", suffix[0]) + 1
	if p == 0 {
		return 0, false
	}
	base := kb
	switch suffix[1:] {
	case "", "b", "i":
	case "ib":
		base = other
	default:
		return 0, false
	}
	m := int64(1)
	for range p {
		m *= base
	}
	return m, true
}

// parseSizeKB parses fio's size type under kb_base kb: a decimal integer
// with an optional case-insensitive suffix (see sizeMult), a hexadecimal
// integer with a 0x prefix and no suffix, or a "(...)" expression. The
// result is a non-negative int64. Where fio would silently read less than
// was written ("4kx" as 4k, "1.5k" as 1, "4 k" as 4) blksim reports a bad
// value instead.
func parseSizeKB(raw string, kb int64) (int64, error) {
	n, pct, err := parseSizePercentKB(raw, kb)
	if err != nil {
		return 0, err
	}
	if pct != 0 {
		return 0, badValue(raw, "a percentage is not allowed for this option")
	}
	return n, nil
}

// parseSizePercentKB is parseSizeKB that also accepts a percentage "N%"
// (1 <= N <= 100), which it returns as pct (n is then 0).
func parseSizePercentKB(raw string, kb int64) (n int64, pct int, err error) {
	if err := checkNumeric(raw); err != nil {
		return 0, 0, err
	}
	if raw[0] == '(' {
		v, err := evalFioExpr(raw, false, 1)
		if err != nil {
			return 0, 0, exprBadValue(raw, err)
		}
		if v < 0 {
			return 0, 0, badValue(raw, "must not be negative")
		}
		return v, 0, nil
	}
	if isHex(raw) {
		n, err := parseInteger(raw)
		if err != nil {
			return 0, 0, badValue(raw, "expected %s", sizeExpect)
		}
		return n, 0, nil
	}
	i := countDigits(raw)
	if i == 0 {
		return 0, 0, badValue(raw, "expected %s", sizeExpect)
	}
	v, err := strconv.ParseInt(raw[:i], 10, 64)
	if err != nil {
		return 0, 0, badValue(raw, "number too large")
	}
	suffix := raw[i:]
	if suffix == "%" {
		if v < 1 || v > 100 {
			return 0, 0, badValue(raw, "a percentage must be from 1%% to 100%%")
		}
		return 0, int(v), nil
	}
	if strings.HasPrefix(suffix, ".") && countDigits(suffix[1:]) > 0 {
		return 0, 0, badValue(raw, "fio reads decimals in sizes as their integer part (%s); write the size in a smaller unit or as an expression such as (%s)", raw[:i], raw)
	}
	mult, ok := sizeMult(strings.ToLower(suffix), kb)
	if !ok {
		return 0, 0, badValue(raw, "unknown size suffix %q: expected %s", suffix, sizeExpect)
	}
	if v > math.MaxInt64/mult {
		return 0, 0, badValue(raw, "number too large")
	}
	return v * mult, 0, nil
}

// parseInt parses an integer option value: fio parses integers like sizes
// ("iodepth=1k" is 1024), so this is parseSizeKB.
func parseInt(raw string, kb int64) (int64, error) { return parseSizeKB(raw, kb) }

// timeUnits maps a lower-cased time suffix to its unit.
//
// Source: fio parse.c, get_mult_time: us, ms, s, m (minutes), h and d,
// case-insensitive; a bare number is in the option's default unit (seconds
// for runtime, ramp_time and startdelay; microseconds for thinktime). fio
// takes any other suffix, even "sec" or "min", as microseconds; blksim
// reads "sec", "min", "usec" and "msec" as their names say and rejects
// unknown suffixes.
var timeUnits = map[string]time.Duration{
	"us": time.Microsecond, "usec": time.Microsecond,
	"ms": time.Millisecond, "msec": time.Millisecond,
	"s": time.Second, "sec": time.Second,
	"m": time.Minute, "min": time.Minute,
	"h": time.Hour,
	"d": 24 * time.Hour,
}

// parseTimeUnit parses fio's time type: a decimal integer with an optional
// suffix from timeUnits, or a "(...)" expression; a bare number is in unit
// (time.Second or time.Microsecond).
func parseTimeUnit(raw string, unit time.Duration) (time.Duration, error) {
	if err := checkNumeric(raw); err != nil {
		return 0, err
	}
	if raw[0] == '(' {
		implied := 1.0
		if unit == time.Second {
			implied = 1e6
		}
		us, err := evalFioExpr(raw, true, implied)
		if err != nil {
			return 0, exprBadValue(raw, err)
		}
		if us < 0 {
			return 0, badValue(raw, "must not be negative")
		}
		if unit == time.Second {
			// fio: *val = ival / 1000000, then times 1000000 again: whole
			// seconds.
			us = us / 1e6 * 1e6
		}
		if us > math.MaxInt64/int64(time.Microsecond) {
			return 0, badValue(raw, "duration too long")
		}
		return time.Duration(us) * time.Microsecond, nil
	}
	i := countDigits(raw)
	if i == 0 {
		return 0, badValue(raw, "expected %s", timeExpect)
	}
	n, err := strconv.ParseInt(raw[:i], 10, 64)
	if err != nil {
		return 0, badValue(raw, "number too large")
	}
	u := unit
	if s := strings.ToLower(raw[i:]); s != "" {
		if strings.HasPrefix(s, ".") && countDigits(s[1:]) > 0 {
			// fio's get_mult_time stops at the point, finds no unit
			// letter there and takes the option's default unit.
			hint := ""
			if rest := s[1+countDigits(s[1:]):]; (rest == "s" || rest == "" && unit == time.Second) && len(s) <= 5 {
				hint = fmt.Sprintf(" (%sms for %s)", decimalMillis(raw[:i]+s[:1+countDigits(s[1:])]), raw)
			}
			return 0, badValue(raw, "fio reads a decimal time as its integer part in the option's default unit, %d%s here (the suffix after the point is ignored); write the time in a smaller unit%s", n, unitSuffix(unit), hint)
		}
		var ok bool
		if u, ok = timeUnits[s]; !ok {
			return 0, badValue(raw, "unknown time suffix %q: expected %s", raw[i:], timeExpectFor(unit))
		}
	}
	if n > math.MaxInt64/int64(u) {
		return 0, badValue(raw, "duration too long")
	}
	return time.Duration(n) * u, nil
}

// unitSuffix is fio's suffix for a time option's default unit.
func unitSuffix(unit time.Duration) string {
	switch unit {
	case time.Microsecond:
		return "us"
	case time.Millisecond:
		return "ms"
	}
	return "s"
}

func timeExpectFor(unit time.Duration) string {
	if unit == time.Microsecond {
		return timeUSExpect
	}
	return timeExpect
}

// exprBadValue wraps an expression error as a bad value.
func exprBadValue(raw string, err error) error {
	var ee *errExpr
	if errors.As(err, &ee) || errors.Is(err, errBCRange) {
		return badValue(raw, "%v", err)
	}
	return badValue(raw, "bad expression: %v", err)
}

// checkNumeric rejects numeric values that are empty or negative, with a
// clearer message than a generic parse failure.
func checkNumeric(raw string) error {
	switch {
	case raw == "":
		return badValue(raw, "a number is required")
	case raw[0] == '-':
		return badValue(raw, "must not be negative")
	}
	return nil
}

// parseInteger parses a plain non-negative integer: decimal, or hexadecimal
// with a 0x prefix (fio's check_int and strtoll accept both).
func parseInteger(raw string) (int64, error) {
	digits, base := raw, 10
	if isHex(raw) {
		digits, base = raw[2:], 16
	}
	if digits == "" || digits[0] == '+' || digits[0] == '-' {
		return 0, strconv.ErrSyntax
	}
	return strconv.ParseInt(digits, base, 64)
}

func isHex(s string) bool {
	return len(s) >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')
}

func countDigits(s string) int {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return i
}

// parseFloat parses a plain non-negative decimal number (no exponent, no
// sign), as fio's distribution parameters are written.
func parseFloat(raw string) (float64, bool) {
	if raw == "" || strings.ContainsAny(raw, "eE+-xXnN") {
		return 0, false
	}
	f, err := strconv.ParseFloat(raw, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, false
	}
	return f, true
}

// decimalMillis returns a decimal number of seconds with at most three
// decimals ("1.5") in whole milliseconds ("1500").
func decimalMillis(num string) string {
	whole, frac, _ := strings.Cut(num, ".")
	ms := strings.TrimLeft(whole+(frac + "000")[:3], "0")
	if ms == "" {
		return "0"
	}
	return ms
}

// maxPercentiles is fio's FIO_IO_U_LIST_MAX_LEN, the longest
// percentile_list.
const maxPercentiles = 20

// parsePercentiles parses fio's percentile_list: values from 0 to 100
// separated by ':', at most 20. As fio, it returns them sorted, ends the
// list at a 0 (fio's calc_clat_percentiles stops there), and takes the
// print precision from the most decimals any value was written with.
func parsePercentiles(raw string) ([]float64, int, error) {
	parts := strings.Split(raw, ":")
	if n := len(parts); n > 1 && strings.TrimSpace(parts[n-1]) == "" {
		// "50:": fio ends the list at the empty entry.
		parts = parts[:n-1]
	}
	if len(parts) > maxPercentiles {
		return nil, 0, badValue(raw, "%d percentiles: fio takes at most %d", len(parts), maxPercentiles)
	}
	ps := []float64{}
	prec := 0
	ended := false
	for _, p := range parts {
		v, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, 0, badValue(raw, "%q is not a number: expected percentages from 0 to 100 separated by ':'", p)
		}
		if v < 0 || v > 100 {
			return nil, 0, badValue(raw, "%s is out of range: a percentile is from 0 to 100", p)
		}
		if i := strings.IndexByte(p, '.'); i >= 0 {
			n := 0
			for _, c := range p[i+1:] {
				if c < '0' || c > '9' {
					break
				}
				n++
			}
			prec = max(prec, n)
		}
		if v == 0 {
			ended = true
		}
		if !ended {
			ps = append(ps, v)
		}
	}
	slices.Sort(ps)
	return ps, prec, nil
}
