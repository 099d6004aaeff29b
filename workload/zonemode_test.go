package workload

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestZoneModeMessages checks that zonemode's values are told apart:
// none is fio's default and changes nothing, strided is an IO pattern over
// an ordinary file (not a zoned device), zbd is the zoned-device mode.
func TestZoneModeMessages(t *testing.T) {
	tests := []struct {
		src      string
		kind     error
		opt      string
		contains []string
		not      []string
	}{
		{"zonemode=strided", ErrNotModelled, "zonemode",
			[]string{"zonemode=strided", "zonesize", "zoneskip", "needs no zoned device"}, []string{"zoned block devices are not modelled"}},
		{"zonemode=zbd", ErrNotModelled, "zonemode", []string{"zoned block devices are not modelled"}, nil},
		{"zonemode=bogus", ErrBadValue, "zonemode", []string{"none, strided or zbd"}, nil},
		{"zonesize=64k", ErrUnknownOption, "zonesize", []string{"zonemode=strided", "ordinary file", "zonemode=zbd"}, nil},
		{"zonerange=256k", ErrUnknownOption, "zonerange", []string{"zonemode=strided"}, nil},
		{"zoneskip=64k", ErrUnknownOption, "zoneskip", []string{"zonemode=strided"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			_, err := Parse("e.fio", strings.NewReader("[j]\n"+tt.src+"\n"), noEnv)
			var pe *ParseError
			require.ErrorAs(t, err, &pe)
			assert.ErrorIs(t, err, tt.kind)
			assert.Equal(t, tt.opt, pe.Option)
			for _, c := range tt.contains {
				assert.Contains(t, err.Error(), c)
			}
			for _, n := range tt.not {
				assert.NotContains(t, err.Error(), n)
			}
		})
	}
	// zonemode=none is fio's default: accepted, nothing changes.
	def, none := parseOne(t, "[j]\n"), parseOne(t, "[j]\nzonemode=none\n")
	def.where, none.where, def.Options, none.Options = nil, nil, nil, nil
	assert.Equal(t, def, none)
}
