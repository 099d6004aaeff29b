package units

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseSize(t *testing.T) {
	tests := []struct {
		in   string
		want int64
	}{
		{"0", 0},
		{"1", 1},
		{"4096", 4096},
		{" 512 ", 512},
		{"1b", 1},
		{"1B", 1},
		{"128k", 128 << 10},
		{"128K", 128 << 10},
		{"128kb", 128 << 10},
		{"128KB", 128 << 10},
		{"128kib", 128 << 10},
		{"128KiB", 128 << 10},
		{"128 KiB", 128 << 10},
		{"3m", 3 << 20},
		{"3M", 3 << 20},
		{"3MiB", 3 << 20},
		{"3mb", 3 << 20},
		{"20g", 20 << 30},
		{"20G", 20 << 30},
		{"20GiB", 20 << 30},
		{"745g", 745 << 30},
		{"2t", 2 << 40},
		{"2TiB", 2 << 40},
		{"2tb", 2 << 40},
		{"0k", 0},
		// The largest values that fit.
		{"9223372036854775807", math.MaxInt64},
		{"9223372036854775807b", math.MaxInt64},
		{"8388607t", 8388607 << 40},
		{"8589934591g", 8589934591 << 30},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseSize(tc.in)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestParseSizeErrors(t *testing.T) {
	tests := []struct {
		in      string
		wantMsg string
	}{
		{"", "is not a size"},
		{"k", "is not a size"},
		{"KiB", "is not a size"},
		{"-1", "is not a size"},
		{"-4k", "is not a size"},
		{"1.5k", "is not a size"},
		{"1e3", "is not a size"},
		{"0x10", "is not a size"},
		{"12q", "is not a size"},
		{"4kk", "is not a size"},
		{"4 k b", "is not a size"},
		{"1pb", "is not a size"},
		{"ten", "is not a size"},
		// Overflow, in the number and in the multiplication.
		{"9223372036854775808", "is not a size"},
		{"99999999999999999999k", "is not a size"},
		{"8589934592g", "overflows"},
		{"8388608t", "overflows"},
		{"9223372036854775807k", "overflows"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseSize(tc.in)
			require.Error(t, err)
			assert.ErrorIs(t, err, ErrSyntax)
			assert.Contains(t, err.Error(), tc.wantMsg)
			assert.Contains(t, err.Error(), `"`+tc.in+`"`, "the error quotes the input")
			assert.Zero(t, got)
		})
	}
}

func TestParseDuration(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
	}{
		{"0", 0},
		{"0s", 0},
		{"1500", 1500 * time.Nanosecond}, // a bare number is nanoseconds
		{" 40 ", 40 * time.Nanosecond},
		{"150ns", 150 * time.Nanosecond},
		{"60us", 60 * time.Microsecond},
		{"60µs", 60 * time.Microsecond},
		{"1.6ms", 1600 * time.Microsecond},
		{"4ms", 4 * time.Millisecond},
		{"2s", 2 * time.Second},
		{"1m30s", 90 * time.Second},
		{"1h", time.Hour},
		{"9223372036854775807", math.MaxInt64},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseDuration(tc.in)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestParseDurationErrors(t *testing.T) {
	for _, in := range []string{
		"", "ms", "-1", "-1ms", "-0.5s", "1.5", "1e3", "10 ms", "3 us", "fast",
		"1d", "9223372036854775808", "3000000h", "0x10",
	} {
		t.Run(in, func(t *testing.T) {
			got, err := ParseDuration(in)
			require.Error(t, err)
			assert.ErrorIs(t, err, ErrSyntax)
			if in == "-1ms" || in == "-0.5s" {
				// a duration, but negative: said so
				assert.Contains(t, err.Error(), "must not be negative")
			} else {
				assert.Contains(t, err.Error(), "is not a duration")
			}
			assert.Contains(t, err.Error(), `"`+in+`"`)
			assert.Zero(t, got)
		})
	}
}

func TestParseBool(t *testing.T) {
	tests := []struct {
		in      string
		want    bool
		wantErr bool
	}{
		{in: "true", want: true},
		{in: "TRUE", want: true},
		{in: " True ", want: true},
		{in: "1", want: true},
		{in: "yes", want: true},
		{in: "on", want: true},
		{in: "ON", want: true},
		{in: "false"},
		{in: "False"},
		{in: "0"},
		{in: "no"},
		{in: "off"},
		{in: "", wantErr: true},
		{in: "maybe", wantErr: true},
		{in: "2", wantErr: true},
		{in: "t", wantErr: true},
		{in: "y", wantErr: true},
		{in: "truee", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseBool(tc.in)
			if tc.wantErr {
				require.Error(t, err)
				assert.ErrorIs(t, err, ErrSyntax)
				assert.Contains(t, err.Error(), "is not a boolean")
				assert.Contains(t, err.Error(), `"`+tc.in+`"`)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestParseInt(t *testing.T) {
	tests := []struct {
		in      string
		lo, hi  int64
		want    int64
		wantErr bool
	}{
		{in: "0", lo: 0, hi: 10, want: 0},
		{in: "10", lo: 0, hi: 10, want: 10},
		{in: " 7 ", lo: 0, hi: 10, want: 7},
		{in: "+7", lo: 0, hi: 10, want: 7},
		{in: "-3", lo: -5, hi: 5, want: -3},
		{in: "-5", lo: -5, hi: 5, want: -5},
		{in: "1048576", lo: 0, hi: 1 << 20, want: 1 << 20},
		{in: "9223372036854775807", lo: 0, hi: math.MaxInt64, want: math.MaxInt64},
		{in: "-9223372036854775808", lo: math.MinInt64, hi: 0, want: math.MinInt64},
		{in: "11", lo: 0, hi: 10, wantErr: true},
		{in: "-1", lo: 0, hi: 10, wantErr: true},
		{in: "-6", lo: -5, hi: 5, wantErr: true},
		{in: "1048577", lo: 0, hi: 1 << 20, wantErr: true},
		{in: "9223372036854775808", lo: 0, hi: math.MaxInt64, wantErr: true},
		{in: "", lo: 0, hi: 10, wantErr: true},
		{in: "1.0", lo: 0, hi: 10, wantErr: true},
		{in: "4k", lo: 0, hi: 1 << 20, wantErr: true},
		{in: "0x10", lo: 0, hi: 100, wantErr: true},
		{in: "1_000", lo: 0, hi: 10000, wantErr: true},
		{in: "three", lo: 0, hi: 10, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseInt(tc.in, tc.lo, tc.hi)
			if tc.wantErr {
				require.Error(t, err)
				assert.ErrorIs(t, err, ErrSyntax)
				assert.Contains(t, err.Error(), "is not an integer in")
				assert.Zero(t, got)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestParseIntErrorNamesBounds(t *testing.T) {
	_, err := ParseInt("17", 1, 16)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `"17"`)
	assert.Contains(t, err.Error(), "[1, 16]")
}

func TestParseFloat(t *testing.T) {
	tests := []struct {
		in   string
		want float64
	}{
		{"0", 0},
		{"400", 400},
		{" 3200 ", 3200},
		{"1.5", 1.5},
		{".5", 0.5},
		{"1e3", 1000},
		{"2.5E-3", 0.0025},
		{"1.7976931348623157e308", math.MaxFloat64},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseFloat(tc.in)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestParseFloatErrors(t *testing.T) {
	for _, in := range []string{
		"", "-1", "-0.001", "-1e-300", "NaN", "nan", "Inf", "+Inf", "-Inf", "inf", "infinity",
		"1e309", "1.8e308", "400MB/s", "fast", "1,5",
	} {
		t.Run(in, func(t *testing.T) {
			got, err := ParseFloat(in)
			require.Error(t, err)
			assert.ErrorIs(t, err, ErrSyntax)
			assert.Contains(t, err.Error(), "is not a non-negative number")
			assert.Zero(t, got)
		})
	}
}

// The results that are returned are always valid: finite and non-negative.
func FuzzParseFloat(f *testing.F) {
	for _, s := range []string{"0", "1.5", "-1", "NaN", "Inf", "1e400", "0x1p3", "-0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseFloat(s)
		if err != nil {
			require.ErrorIs(t, err, ErrSyntax)
			return
		}
		require.False(t, math.IsNaN(v) || math.IsInf(v, 0) || v < 0, "ParseFloat(%q) = %v", s, v)
	})
}

func FuzzParseSize(f *testing.F) {
	for _, s := range []string{
		"0", "4k", "128KiB", "20G", "2t", "-1", "1.5k", "", "k", "9223372036854775807",
		"8589934592g", " 3 MB ", "\x00", "1\xffk",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseSize(s)
		if err != nil {
			require.ErrorIs(t, err, ErrSyntax)
			require.Zero(t, n)
			return
		}
		require.GreaterOrEqual(t, n, int64(0), "ParseSize(%q)", s)
	})
}

func FuzzParseDuration(f *testing.F) {
	for _, s := range []string{
		"0", "1500", "60us", "1.6ms", "4ms", "-1", "-1ms", "", "1.5", "1h2m3s",
		"9223372036854775807", "3000000h", "\x00", "1\xffs",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDuration(s)
		if err != nil {
			require.ErrorIs(t, err, ErrSyntax)
			require.Zero(t, d)
			return
		}
		require.GreaterOrEqual(t, d, time.Duration(0), "ParseDuration(%q)", s)
	})
}
