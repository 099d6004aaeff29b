package workload

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseUnifiedRWReporting(t *testing.T) {
	tests := []struct {
		value string
		want  int
	}{
		{"none", 0}, {"0", 0},
		{"mixed", 1}, {"1", 1},
		{"both", 2}, {"2", 2},
	}
	for _, tt := range tests {
		t.Run(tt.value, func(t *testing.T) {
			js := parseOne(t, "[j]\nunified_rw_reporting="+tt.value+"\n")
			assert.Equal(t, tt.want, js.UnifiedRW)
		})
	}
	assert.Equal(t, 0, parseOne(t, "[j]\n").UnifiedRW, "fio's default is none")

	// fio 3.33: "failed parsing unified_rw_reporting=3", listing none,
	// mixed and both.
	for _, bad := range []string{"3", "yes", "MIXED"} {
		_, err := Parse("e.fio", strings.NewReader("[j]\nunified_rw_reporting="+bad+"\n"), noEnv)
		var pe *ParseError
		require.ErrorAs(t, err, &pe, bad)
		assert.ErrorIs(t, err, ErrBadValue)
		assert.Equal(t, "unified_rw_reporting", pe.Option)
		assert.Contains(t, err.Error(), "none, mixed or both")
	}
}

// TestUnifiedRWReportingResult checks the mode reaches the job's result,
// and that a group_reporting result takes its first job's, as fio's
// __show_run_stats does.
func TestUnifiedRWReportingResult(t *testing.T) {
	jobs, _, _ := runSrc(t, "[a]\nrw=randrw\nsize=64k\nunified_rw_reporting=both\n[b]\nrw=randrw\nsize=64k\n")
	require.Len(t, jobs, 2)
	assert.Equal(t, 2, jobs[0].UnifiedRW)
	assert.Equal(t, 0, jobs[1].UnifiedRW)

	res, _ := runJobs(t, 1, "[g]\nrw=randrw\nsize=64k\nnumjobs=2\ngroup_reporting\nunified_rw_reporting=mixed\n", RunOptions{})
	require.Len(t, res.Groups, 1)
	require.Len(t, res.Groups[0].Jobs, 1)
	assert.Equal(t, 1, res.Groups[0].Jobs[0].UnifiedRW)
}
