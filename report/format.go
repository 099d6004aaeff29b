package report

import (
	"fmt"
	"strconv"
	"strings"
)

// sigFigs is fio's default sig_figs: the digits num2str may use, counting
// the decimal point.
const sigFigs = 4

var (
	siPrefix  = [...]string{"", "k", "M", "G", "T", "P", "E"}
	iecPrefix = [...]string{"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"}
)

// num2str formats num as fio's num2str(num, maxlen, 1, pow2, units) does:
// divide by 1000 (or 1024 when pow2) until at most maxlen digits remain,
// then use the spare digits, if at least two, for a rounded fraction
// ("30.9k", "18.8MiB/s"), or else round the integer ("382KiB/s").
// unit is appended after the prefix: "", "B" or "B/s".
//
// This matches current fio, which carries a fraction that rounds up to 1
// into the integer part: fio 3.25 printed 23066700 bytes as "21.0MiB",
// current fio and blksim print "22.0MiB".
func num2str(num uint64, maxlen int, pow2 bool, unit string) string {
	thousand := uint64(1000)
	prefix := siPrefix[:]
	if pow2 {
		thousand = 1024
		prefix = iecPrefix[:]
	}
	post := 0
	divided := false
	var modulo uint64
	carry := false
	for post < len(prefix) && digits(num) > maxlen {
		modulo = num % thousand
		num /= thousand
		carry = modulo >= thousand/2
		divided = true
		post++
	}
	if post >= len(prefix) {
		post = 0 // as fio; unreachable for maxlen >= 2
	}
	if !divided {
		return strconv.FormatUint(num, 10) + prefix[post] + unit
	}
	spare := maxlen - digits(num)
	if spare <= 1 {
		if carry {
			num++
		}
		return strconv.FormatUint(num, 10) + prefix[post] + unit
	}
	frac := strconv.FormatFloat(float64(modulo)/float64(thousand), 'f', spare-1, 64)
	if frac[0] == '1' { // the fraction rounded up to 1.0...
		num++
	}
	return strconv.FormatUint(num, 10) + "." + frac[2:] + prefix[post] + unit
}

// digits returns the number of decimal digits of v (1 for 0).
func digits(v uint64) int {
	n := 1
	for v >= 10 {
		v /= 10
		n++
	}
	return n
}

// formatIOPS formats an IOPS figure as fio's per-direction line ("7731",
// "30.9k").
func formatIOPS(iops uint64) string { return num2str(iops, sigFigs, false, "") }

// formatBW formats a bandwidth in bytes per second as fio does with its
// default kb_base=1024: binary prefix first, decimal alternative second
// ("30.2MiB/s", "31.7MB/s").
func formatBW(bytesPerSec uint64) (bin, dec string) {
	return num2str(bytesPerSec, sigFigs, true, "B/s"), num2str(bytesPerSec, sigFigs, false, "B/s")
}

// bwByBase is formatBW in the order fio prints the two for kb_base: the
// binary rendering first unless kb_base is 1000.
func bwByBase(bytesPerSec uint64, kbBase int64) (first, second string) {
	bin, dec := formatBW(bytesPerSec)
	return byBase(bin, dec, kbBase)
}

// bytesByBase is formatBytes in kb_base's order, as bwByBase.
func bytesByBase(n uint64, kbBase int64) (first, second string) {
	bin, dec := formatBytes(n)
	return byBase(bin, dec, kbBase)
}

// byBase orders a binary and a decimal rendering for kb_base.
func byBase(bin, dec string, kbBase int64) (first, second string) {
	if kbBase == 1000 {
		return dec, bin
	}
	return bin, dec
}

// formatBytes formats an amount of bytes as fio does ("4096MiB", "23.1MB").
func formatBytes(n uint64) (bin, dec string) {
	return num2str(n, sigFigs, true, "B"), num2str(n, sigFigs, false, "B")
}

// latLine formats one of fio's latency summary lines ("    clat (usec):
// min=..., max=..., avg=..., stdev=...") for min, max, mean and stddev in
// nanoseconds. name is "slat", "clat" or " lat".
//
// The unit follows fio's nsec_to_msec/nsec_to_usec: msec when min > 2 ms,
// max > 99.999999 ms and stdev > 1 ms; else usec when min > 2 us,
// max > 99.999 us and stdev > 1 us; else nsec. min and max are divided
// with truncation and printed with num2str(6 digits), so large values get a
// "k" ("max=1122.1k"); mean and stdev are printed with two decimals.
func latLine(name string, min, max uint64, mean, dev float64) string {
	unit := "nsec"
	switch {
	case min > 2000000 && max > 99999999 && dev > 1000000.0:
		unit = "msec"
		min, max = min/1000000, max/1000000
		mean, dev = mean/1000000.0, dev/1000000.0
	case min > 2000 && max > 99999 && dev > 1000.0:
		unit = "usec"
		min, max = min/1000, max/1000
		mean, dev = mean/1000.0, dev/1000.0
	}
	return fmt.Sprintf("    %s (%s): min=%s, max=%s, avg=%5.2f, stdev=%5.2f\n",
		name, unit, num2str(min, 6, false, ""), num2str(max, 6, false, ""), mean, dev)
}

// percentileBlock formats fio's percentile block ("    clat percentiles
// (usec):" and the bracketed rows) for the values vals (nanoseconds) of the
// percentiles ps.
//
// As fio's show_clat_percentiles: the unit is msec when the smallest value
// is above 2 ms and the largest above 99.999999 ms, usec when they are above
// 2 us and 99.999 us, else nsec; scaled values are rounded up. Values are
// right-aligned in a field as wide as the largest scaled (truncated) value,
// at least 5, with as many entries per row as fit in 80 columns.
func percentileBlock(name string, ps []float64, precision int, vals []uint64) string {
	if len(vals) == 0 {
		return ""
	}
	minv, maxv := vals[0], vals[0]
	for _, v := range vals {
		minv, maxv = min(minv, v), max(maxv, v)
	}
	unit, divisor, scale := "nsec", uint64(1), 0
	switch {
	case minv > 2000000 && maxv > 99999999:
		unit, divisor, scale = "msec", 1000000, 2
	case minv > 2000 && maxv > 99999:
		unit, divisor, scale = "usec", 1000, 1
	}
	width := 5
	if maxv/divisor > 0 {
		width = max(width, digits(maxv/divisor))
	}
	perLine := (80 - 7) / (precision + 10 + width)

	var b strings.Builder
	fmt.Fprintf(&b, "    %s percentiles (%s):\n     |", name, unit)
	for j, v := range vals {
		if j != 0 && j%perLine == 0 {
			b.WriteString("     |")
		}
		for range scale {
			v = (v + 999) / 1000
		}
		last := j == len(vals)-1
		sep := ','
		if last {
			sep = '\n'
		}
		fmt.Fprintf(&b, " %*.*fth=[%*d]%c", precision+3, precision, ps[j], width, v, sep)
		if !last && j%perLine == perLine-1 {
			b.WriteByte('\n')
		}
	}
	return b.String()
}
