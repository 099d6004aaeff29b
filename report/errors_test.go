package report

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestContinueOnErrorFigures: a job with continue_on_error gets fio's
// errors line (normal) and total_err/first_error (JSON); others do not.
func TestContinueOnErrorFigures(t *testing.T) {
	r := sampleResult()
	j := &r.Groups[0].Jobs[0]
	j.ContinueOnError, j.TotalErr, j.FirstError = true, 3, 5

	var b bytes.Buffer
	require.NoError(t, WriteNormal(&b, r, Options{OmitWall: true}))
	assert.Contains(t, b.String(), "  cpu          : ")
	assert.Contains(t, b.String(), "\n     errors    : total=3, first_error=5/<Input/output error>\n")
	assert.Equal(t, 1, bytes.Count(b.Bytes(), []byte("     errors    : ")))

	b.Reset()
	require.NoError(t, WriteJSON(&b, r, Options{OmitWall: true}))
	var doc struct {
		Jobs []map[string]any `json:"jobs"`
	}
	require.NoError(t, json.Unmarshal(b.Bytes(), &doc))
	require.NotEmpty(t, doc.Jobs)
	assert.Equal(t, 3.0, doc.Jobs[0]["total_err"])
	assert.Equal(t, 5.0, doc.Jobs[0]["first_error"])
	for _, o := range doc.Jobs[1:] {
		assert.NotContains(t, o, "total_err")
	}
}
