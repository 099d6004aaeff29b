// Package units parses the value syntax of blksim's stack and device
// profile files: sizes with binary suffixes, durations, rates and booleans.
package units

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// ErrSyntax is wrapped by every parse error of this package.
var ErrSyntax = errors.New("invalid value")

// ParseSize parses a byte count: a non-negative integer with an optional
// binary suffix k, m, g, t (or kb/kib, mb/mib, ...), case-insensitive, so
// "128k" and "128KiB" are 131072.
func ParseSize(s string) (int64, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	mult := int64(1)
	for _, suf := range []struct {
		s string
		m int64
	}{
		{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30}, {"tib", 1 << 40},
		{"kb", 1 << 10}, {"mb", 1 << 20}, {"gb", 1 << 30}, {"tb", 1 << 40},
		{"k", 1 << 10}, {"m", 1 << 20}, {"g", 1 << 30}, {"t", 1 << 40}, {"b", 1},
	} {
		if strings.HasSuffix(t, suf.s) {
			t = strings.TrimSpace(strings.TrimSuffix(t, suf.s))
			mult = suf.m
			break
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%w: %q is not a size (an integer with an optional k/m/g/t suffix)", ErrSyntax, s)
	}
	if n > math.MaxInt64/mult {
		return 0, fmt.Errorf("%w: size %q overflows", ErrSyntax, s)
	}
	return n * mult, nil
}

// ParseDuration parses a non-negative Go duration ("60us", "1.6ms"); a bare
// number is nanoseconds.
func ParseDuration(s string) (time.Duration, error) {
	t := strings.TrimSpace(s)
	if n, err := strconv.ParseInt(t, 10, 64); err == nil && n >= 0 {
		return time.Duration(n), nil
	}
	d, err := time.ParseDuration(t)
	if err != nil {
		return 0, fmt.Errorf("%w: %q is not a duration (like 60us or 1.6ms)", ErrSyntax, s)
	}
	if d < 0 {
		return 0, fmt.Errorf("%w: %q: a duration must not be negative", ErrSyntax, s)
	}
	return d, nil
}

// ParseBool accepts true/false, 1/0, yes/no, on/off.
func ParseBool(s string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "true", "1", "yes", "on":
		return true, nil
	case "false", "0", "no", "off":
		return false, nil
	}
	return false, fmt.Errorf("%w: %q is not a boolean (true or false)", ErrSyntax, s)
}

// ParseInt parses a decimal integer in [lo, hi].
func ParseInt(s string, lo, hi int64) (int64, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil || n < lo || n > hi {
		return 0, fmt.Errorf("%w: %q is not an integer in [%d, %d]", ErrSyntax, s, lo, hi)
	}
	return n, nil
}

// ParseFloat parses a finite non-negative decimal number.
func ParseFloat(s string) (float64, error) {
	f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || f < 0 || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, fmt.Errorf("%w: %q is not a non-negative number", ErrSyntax, s)
	}
	return f, nil
}
