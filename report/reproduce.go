package report

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/blksim/blksim/internal/units"
)

// Metric is a figure of a run that an experiment's published.toml can
// state for a row.
type Metric struct {
	// Key is the metric's key in published.toml ("read_mibs").
	Key string
	// Label is its name in text output ("read MiB/s").
	Label string
	// Value extracts the metric from a run's summary.
	Value func(Summary) float64
}

// metrics is Metrics' list, in display order.
var metrics = []Metric{
	{"read_mibs", "read MiB/s", func(s Summary) float64 { return s.Read.MiBs }},
	{"read_iops", "read IOPS", func(s Summary) float64 { return s.Read.IOPS }},
	{"read_lat_us", "read lat us", func(s Summary) float64 { return s.Read.LatUs }},
	{"read_requests", "read requests", func(s Summary) float64 { return float64(s.Read.Requests) }},
	{"write_mibs", "write MiB/s", func(s Summary) float64 { return s.Write.MiBs }},
	{"write_iops", "write IOPS", func(s Summary) float64 { return s.Write.IOPS }},
	{"write_lat_us", "write lat us", func(s Summary) float64 { return s.Write.LatUs }},
	{"write_requests", "write requests", func(s Summary) float64 { return float64(s.Write.Requests) }},
}

// Metrics returns the fixed metrics published.toml may state, in the
// order reports list them; MetricByKey also knows the request-size
// metrics. The caller may modify the returned slice.
func Metrics() []Metric { return append([]Metric(nil), metrics...) }

// RequestSizeKeys describes the request-size metric keys, for messages.
const RequestSizeKeys = "read_requests_SIZE, write_requests_SIZE (requests of exactly SIZE, as 4k or 512k)"

// MetricByKey returns the metric named key: a fixed one (Metrics), or
// DIR_requests_SIZE with DIR read or write and SIZE a size as fio writes
// it (4k, 512k, 1m; a positive multiple of 512 bytes): the requests of
// that direction dispatched with exactly SIZE bytes. A request-size
// metric's Key is its canonical spelling (4096 becomes 4k), so two keys
// naming the same metric have the same Key. It returns an error naming
// the problem for anything else.
func MetricByKey(key string) (Metric, error) {
	for _, m := range metrics {
		if m.Key == key {
			return m, nil
		}
	}
	dir, size, ok := strings.Cut(key, "_requests_")
	if !ok || (dir != "read" && dir != "write") {
		return Metric{}, fmt.Errorf("unknown metric %q", key)
	}
	n, err := units.ParseSize(size)
	if err != nil || n <= 0 || n%512 != 0 {
		return Metric{}, fmt.Errorf("metric %q: size %q: want a positive multiple of 512 bytes, as 4k or 512k", key, size)
	}
	label := sizeLabel(n)
	value := func(s Summary) float64 { return float64(s.Read.RequestSizes[n]) }
	if dir == "write" {
		value = func(s Summary) float64 { return float64(s.Write.RequestSizes[n]) }
	}
	return Metric{Key: dir + "_requests_" + label, Label: dir + " requests " + label, Value: value}, nil
}

// ReproMetric is one metric of one row: the published and simulated
// values and how far apart they are.
type ReproMetric struct {
	// Key is the Metric's key; Label its text name.
	Key   string `json:"name"`
	Label string `json:"-"`
	// Published is the value from published.toml, Simulated the run's.
	Published float64 `json:"published"`
	Simulated float64 `json:"simulated"`
	// Error is the ratio error, Simulated/Published - 1.
	Error float64 `json:"error"`
	// OK reports |Error| <= the row's tolerance.
	OK bool `json:"ok"`
}

// NewReproMetric compares a simulated value with a published one (which
// must not be 0) within tolerance, a fraction (0.15 for 15%).
func NewReproMetric(m Metric, published, simulated, tolerance float64) ReproMetric {
	e := simulated/published - 1
	return ReproMetric{Key: m.Key, Label: m.Label, Published: published, Simulated: simulated,
		Error: e, OK: math.Abs(e) <= tolerance}
}

// ReproRow is one row of an experiment: one run of the experiment's job on
// one stack.
type ReproRow struct {
	Name string `json:"name"`
	// Stack is the stack file the row runs on.
	Stack string `json:"stack"`
	// Env holds the job-file variables the row sets (${BS} ...).
	Env map[string]string `json:"env"`
	// Set holds the row's KEY=VALUE stack overrides.
	Set []string `json:"set"`
	// Tolerance is the largest |ratio error| accepted, as a fraction.
	Tolerance float64       `json:"tolerance"`
	Metrics   []ReproMetric `json:"metrics"`
	// OK reports that every metric is within tolerance.
	OK bool `json:"ok"`
}

// ReproRatio compares the ratio of one metric between two rows of an
// experiment (a published speed-up) with the simulated one.
type ReproRatio struct {
	Name string `json:"name"`
	// Of and Over name the rows: the ratio is Of's metric over Over's.
	Of   string `json:"of"`
	Over string `json:"over"`
	// Key is the Metric's key; Label its text name.
	Key   string `json:"metric"`
	Label string `json:"-"`
	// Published and Simulated are the ratios; Error is
	// Simulated/Published - 1. Simulated and Error are nil when the
	// denominator row's metric is 0 (no ratio; never within tolerance).
	Published float64  `json:"published"`
	Simulated *float64 `json:"simulated"`
	Error     *float64 `json:"error"`
	// Tolerance is the largest |Error| accepted, as a fraction.
	Tolerance float64 `json:"tolerance"`
	OK        bool    `json:"ok"`
}

// SetSimulated records the simulated metric of the two rows and judges
// the ratio against its tolerance (a zero denominator is never OK).
func (q *ReproRatio) SetSimulated(of, over float64) {
	if over == 0 {
		q.Simulated, q.Error, q.OK = nil, nil, false
		return
	}
	sim := of / over
	e := sim/q.Published - 1
	q.Simulated, q.Error = &sim, &e
	q.OK = math.Abs(e) <= q.Tolerance
}

// texts returns the simulated ratio and its error as text ("n/a" when
// there is no ratio).
func (q *ReproRatio) texts() (sim, err string) {
	if q.Simulated == nil {
		return "n/a", "n/a (zero denominator)"
	}
	return fmt.Sprintf("%.2f", *q.Simulated), percent(*q.Error)
}

// ReproExperiment is one shipped experiment: its source and rows.
type ReproExperiment struct {
	// Name is the experiment's directory name.
	Name string `json:"name"`
	// Source says where the published numbers come from.
	Source string `json:"source"`
	// Job is the job file the rows run.
	Job string `json:"job"`
	// Seed is the engine seed of every row.
	Seed uint64 `json:"seed"`
	// Tolerance is the experiment's default tolerance (a fraction).
	Tolerance float64    `json:"tolerance"`
	Rows      []ReproRow `json:"rows"`
	// Ratios are the published ratios between rows (omitted when none).
	Ratios []ReproRatio `json:"ratios,omitempty"`
}

// Reproduction is the outcome of "blksim reproduce".
type Reproduction struct {
	Experiments []ReproExperiment `json:"experiments"`
	// Rows counts every row, RowsOff those outside their tolerance.
	Rows    int `json:"rows"`
	RowsOff int `json:"rows_off"`
	// Ratios counts every ratio, RatiosOff those outside their tolerance
	// (both omitted when there are no ratios).
	Ratios    int  `json:"ratios,omitempty"`
	RatiosOff int  `json:"ratios_off,omitempty"`
	OK        bool `json:"ok"`
}

// Tally sets each row's OK from its metrics, and r's Rows, RowsOff,
// Ratios, RatiosOff and OK from the rows and ratios (whose OK
// SetSimulated has set). Calling it again gives the same counts.
func (r *Reproduction) Tally() {
	r.Rows, r.RowsOff, r.Ratios, r.RatiosOff = 0, 0, 0, 0
	for ei := range r.Experiments {
		for ri := range r.Experiments[ei].Rows {
			row := &r.Experiments[ei].Rows[ri]
			row.OK = true
			for _, m := range row.Metrics {
				row.OK = row.OK && m.OK
			}
			r.Rows++
			if !row.OK {
				r.RowsOff++
			}
		}
		for _, q := range r.Experiments[ei].Ratios {
			r.Ratios++
			if !q.OK {
				r.RatiosOff++
			}
		}
	}
	r.OK = r.RowsOff == 0 && r.RatiosOff == 0
}

// percent formats a fraction as a signed percentage ("+1.3%", "-22.0%").
func percent(f float64) string { return fmt.Sprintf("%+.1f%%", 100*f) }

// tolerance formats a tolerance fraction ("±15%").
func tolerance(f float64) string { return "±" + strconv.FormatFloat(100*f, 'f', -1, 64) + "%" }

// WriteReproduce writes r as text: for each experiment, a line "NAME:
// SOURCE", a line with the job, seed and tolerance, and a table with one
// line per metric of each row (the row's name on its first line): the
// published value, the simulated one, the ratio error (simulated/published
// - 1) and OK, or OFF when the error is outside the row's tolerance (a row
// whose tolerance differs from the experiment's says so after its name);
// then a line counting the rows within tolerance, and one line per ratio
// ("ratio NAME: METRIC of ROW over ROW: published, simulated, error,
// tolerance, OK or OFF"). The last line sums up
// the whole run and, if rows are off, names each with the metrics that are
// off and by how much. It returns the first error from w.
func WriteReproduce(w io.Writer, r *Reproduction) error {
	var b strings.Builder
	for ei := range r.Experiments {
		e := &r.Experiments[ei]
		if ei > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "%s: %s\n", e.Name, e.Source)
		fmt.Fprintf(&b, "  job %s, seed %d, tolerance %s\n", e.Job, e.Seed, tolerance(e.Tolerance))
		type line struct{ row, metric, pub, sim, err, status string }
		lines := []line{{"ROW", "METRIC", "PUBLISHED", "SIMULATED", "ERROR", ""}}
		ok := 0
		for _, row := range e.Rows {
			name := row.Name
			if row.Tolerance != e.Tolerance {
				name += " (" + tolerance(row.Tolerance) + ")"
			}
			if row.OK {
				ok++
			}
			if len(row.Metrics) == 0 {
				lines = append(lines, line{row: name, metric: "(in ratios)"})
			}
			for mi, m := range row.Metrics {
				l := line{"", m.Label, fmt.Sprintf("%.1f", m.Published), fmt.Sprintf("%.1f", m.Simulated), percent(m.Error), "OK"}
				if mi == 0 {
					l.row = name
				}
				if !m.OK {
					l.status = "OFF"
				}
				lines = append(lines, l)
			}
		}
		var wr, wm, wp, ws, we int
		for _, l := range lines {
			wr, wm = max(wr, len(l.row)), max(wm, len(l.metric))
			wp, ws, we = max(wp, len(l.pub)), max(ws, len(l.sim)), max(we, len(l.err))
		}
		for _, l := range lines {
			s := fmt.Sprintf("  %-*s  %-*s  %*s  %*s  %*s  %s", wr, l.row, wm, l.metric, wp, l.pub, ws, l.sim, we, l.err, l.status)
			b.WriteString(strings.TrimRight(s, " "))
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "  %d of %d rows within tolerance\n", ok, len(e.Rows))
		for _, q := range e.Ratios {
			status := "OK"
			if !q.OK {
				status = "OFF"
			}
			sim, e := q.texts()
			fmt.Fprintf(&b, "  ratio %s: %s of %s over %s: published %.2f, simulated %s, %s (tolerance %s) %s\n",
				q.Name, q.Label, q.Of, q.Over, q.Published, sim, e, tolerance(q.Tolerance), status)
		}
	}
	if len(r.Experiments) > 0 {
		b.WriteString("\n")
	}
	b.WriteString(r.Verdict())
	b.WriteString("\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// Verdict is WriteReproduce's last line: "reproduce: OK, all N rows of E
// experiments within tolerance", or "reproduce: OFF, K of N rows outside
// tolerance: " and, for each row off, "EXPERIMENT/ROW (METRIC +x.x%, ...;
// tolerance ±T%)". With ratios the counts read "N rows and R ratios" and
// each ratio off is named "EXPERIMENT/ratio NAME (METRIC +x.x%; tolerance
// ±T%)". Call Tally first.
func (r *Reproduction) Verdict() string {
	exps := "experiments"
	if len(r.Experiments) == 1 {
		exps = "experiment"
	}
	ratios := ""
	if r.Ratios > 0 {
		ratios = fmt.Sprintf(" and %d ratios", r.Ratios)
	}
	if r.RowsOff == 0 && r.RatiosOff == 0 {
		return fmt.Sprintf("reproduce: OK, all %d rows%s of %d %s within tolerance", r.Rows, ratios, len(r.Experiments), exps)
	}
	var off []string
	for _, e := range r.Experiments {
		for _, row := range e.Rows {
			if row.OK {
				continue
			}
			var ms []string
			for _, m := range row.Metrics {
				if !m.OK {
					ms = append(ms, m.Label+" "+percent(m.Error))
				}
			}
			off = append(off, fmt.Sprintf("%s/%s (%s; tolerance %s)", e.Name, row.Name, strings.Join(ms, ", "), tolerance(row.Tolerance)))
		}
		for _, q := range e.Ratios {
			if !q.OK {
				_, qe := q.texts()
				off = append(off, fmt.Sprintf("%s/ratio %s (%s %s; tolerance %s)", e.Name, q.Name, q.Label, qe, tolerance(q.Tolerance)))
			}
		}
	}
	if r.Ratios > 0 {
		return fmt.Sprintf("reproduce: OFF, %d of %d rows and %d of %d ratios outside tolerance: %s", r.RowsOff, r.Rows, r.RatiosOff, r.Ratios, strings.Join(off, "; "))
	}
	return fmt.Sprintf("reproduce: OFF, %d of %d rows outside tolerance: %s", r.RowsOff, r.Rows, strings.Join(off, "; "))
}

// WriteReproduceJSON writes r as indented JSON: "experiments", each with
// "name", "source", "job", "seed", "tolerance" and "rows"; each row with
// "name", "stack", "env", "set", "tolerance", "metrics" (each "name" as in
// published.toml, "published", "simulated", "error" as a fraction, and
// "ok") and "ok", and "ratios" when it has any (each "name", "of",
// "over", "metric", "published", "simulated" and "error", null when the
// denominator is 0, "tolerance" and "ok"); then the totals "rows",
// "rows_off", "ratios" and "ratios_off" (when there are ratios) and "ok".
// It returns the first error from w.
func WriteReproduceJSON(w io.Writer, r *Reproduction) error {
	return writeIndentedJSON(w, r)
}
